"""`translator export`: a trained run to a self-contained CTranslate2 model directory.

The weights go through CTranslate2's own specification and saving API (`TransformerSpec`,
`ModelSpec.save`); the directory also holds the run's tokenizers and its config (decoding settings
included), so that `translate --model DIR` and `serve --model DIR` need nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from translator.config import ModelConfig
from translator.data.casing import CASING_FILE
from translator.data.spelling import SPELLING_FILE
from translator.data.tokenizer import save_tokenizer
from translator.durable import published_dir
from translator.errors import ConfigError, TranslatorError
from translator.export.engine import META_FILE, import_ctranslate2
from translator.inference.predict import LoadedModel
from translator.jsonfile import save_word_table
from translator.model.transformer import Embedding, MultiHeadAttention, Transformer
from translator.run.names import tokenizer_file
from translator.specials import EOS, SOS, UNK

log = logging.getLogger("translator")

QUANTIZATIONS = ("float32", "int8", "int8_float32", "bfloat16")

# Every model option and the values the exporter maps onto CTranslate2's spec. An option added to
# ModelConfig later is refused until it is listed here (and mapped in `build_spec`).
EXPORTABLE: dict[str, tuple[Any, ...] | None] = {
    "norm": ("pre", "post"),
    "activation": ("relu", "gelu", "swish"),
    "positions": ("sinusoidal", "sinusoidal_halves", "learned"),
    "tie_embeddings": (True, False),
    "scale_embeddings": (True, False),
    "source_sos": (True, False),  # the engine leaves [SOS] out of the tokens it gives
    # sizes and training-only settings: any value
    "d_model": None,
    "n_heads": None,
    "encoder_layers": None,
    "decoder_layers": None,
    "d_ff": None,
    "dropout": None,
    "attention_dropout": None,
    "max_positions": None,
}


def check_exportable(cfg: ModelConfig) -> None:
    """Refuse, in one line, a model option the exporter does not map onto CTranslate2."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name not in EXPORTABLE:
            if value == f.default:
                continue  # a new option left at its default changes nothing
            raise ConfigError(
                f"model.{f.name}={value!r} cannot be exported to CTranslate2 yet; "
                "use translate --run with the PyTorch engine instead"
            )
        allowed = EXPORTABLE[f.name]
        if allowed is not None and value not in allowed:
            raise ConfigError(
                f"model.{f.name}={value!r} cannot be exported to CTranslate2 "
                f"(supported: {', '.join(map(str, allowed))})"
            )


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy().copy()  # a copy: tied tensors get their own arrays


def _linear(spec: Any, layers: list[torch.nn.Linear]) -> None:
    """Fill a LinearSpec with one nn.Linear, or with several fused along the output axis."""
    spec.weight = np.concatenate([_np(layer.weight) for layer in layers])
    spec.bias = np.concatenate([_np(layer.bias) for layer in layers])


def _layer_norm(spec: Any, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _np(norm.weight), _np(norm.bias)


def _attention(spec: Any, attn: MultiHeadAttention, self_attention: bool) -> None:
    if self_attention:  # linear[0] = fused q, k, v; linear[1] = output
        _linear(spec.linear[0], [attn.q_proj, attn.k_proj, attn.v_proj])
    else:  # linear[0] = q; linear[1] = fused k, v; linear[2] = output
        _linear(spec.linear[0], [attn.q_proj])
        _linear(spec.linear[1], [attn.k_proj, attn.v_proj])
    _linear(spec.linear[-1], [attn.out_proj])


def _embeddings(spec: Any, positions_spec: Any, embed: Embedding) -> None:
    spec.weight = _np(embed.tokens.weight)
    # CTranslate2's own sinusoids are laid out [sin | cos]; ours interleave them. Storing the table
    # (learned or sinusoidal) makes both exact.
    positions_spec.encodings = _np(embed.positions)


def build_spec(model: Transformer, src_tokens: list[str], tgt_tokens: list[str]) -> Any:
    """CTranslate2's TransformerSpec holding `model`'s weights and vocabularies."""
    import_ctranslate2()  # the one-line error naming the pip command
    from ctranslate2.specs import common_spec, transformer_spec

    cfg = model.cfg
    check_exportable(cfg)
    pre = cfg.norm == "pre"
    act = {
        "gelu": common_spec.Activation.GELU,
        "swish": common_spec.Activation.SWISH,
    }.get(cfg.activation, common_spec.Activation.RELU)
    encoder = transformer_spec.TransformerEncoderSpec(
        cfg.encoder_layers, cfg.n_heads, pre_norm=pre, activation=act
    )
    decoder = transformer_spec.TransformerDecoderSpec(
        cfg.decoder_layers, cfg.n_heads, pre_norm=pre, activation=act
    )
    _embeddings(encoder.embeddings[0], encoder.position_encodings, model.src_embed)
    _embeddings(decoder.embeddings, decoder.position_encodings, model.tgt_embed)
    for spec, layer in zip(encoder.layer, model.encoder_layers, strict=True):
        _attention(spec.self_attention, layer.self_attn, True)
        _layer_norm(spec.self_attention.layer_norm, layer.attn_block.norm)
        _linear(spec.ffn.linear_0, [layer.ffn.fc1])
        _linear(spec.ffn.linear_1, [layer.ffn.fc2])
        _layer_norm(spec.ffn.layer_norm, layer.ffn_block.norm)
    for spec, layer in zip(decoder.layer, model.decoder_layers, strict=True):
        _attention(spec.self_attention, layer.self_attn, True)
        _layer_norm(spec.self_attention.layer_norm, layer.self_block.norm)
        _attention(spec.attention, layer.cross_attn, False)
        _layer_norm(spec.attention.layer_norm, layer.cross_block.norm)
        _linear(spec.ffn.linear_0, [layer.ffn.fc1])
        _linear(spec.ffn.linear_1, [layer.ffn.fc2])
        _layer_norm(spec.ffn.layer_norm, layer.ffn_block.norm)
    if pre:  # post-norm models have no final LayerNorm, and neither has the spec
        _layer_norm(encoder.layer_norm, model.encoder_norm)
        _layer_norm(decoder.layer_norm, model.decoder_norm)
    _linear(decoder.projection, [model.output])  # tied: a copy of the target embedding
    encoder.scale_embeddings = decoder.scale_embeddings = cfg.scale_embeddings

    spec = transformer_spec.TransformerSpec(encoder, decoder)
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = UNK, SOS, EOS
    spec.config.decoder_start_token = SOS
    spec.config.layer_norm_epsilon = model.encoder_layers[0].attn_block.norm.eps
    spec.register_source_vocabulary(src_tokens)
    spec.register_target_vocabulary(tgt_tokens)
    return spec


def vocabulary(tokenizer: Any) -> list[str]:
    """The tokenizer's tokens in id order (ids must run 0..V-1 without gaps)."""
    by_id = {i: tok for tok, i in tokenizer.get_vocab().items()}
    if sorted(by_id) != list(range(len(by_id))):
        raise TranslatorError("the tokenizer's ids have gaps; it cannot be exported")
    return [by_id[i] for i in range(len(by_id))]


def export_model(loaded: LoadedModel, output: Path, quantization: str = "int8") -> None:
    """Write `loaded` as a CTranslate2 model directory at `output` (created; must not exist)."""
    if quantization not in QUANTIZATIONS:
        raise ConfigError(
            f"--quantization {quantization}: choose one of {', '.join(QUANTIZATIONS)}"
        )
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError(f"--output {output}: already exists; remove it or choose a new directory")
    src_tokens, tgt_tokens = vocabulary(loaded.src_tokenizer), vocabulary(loaded.tgt_tokenizer)
    spec = build_spec(loaded.model, src_tokens, tgt_tokens)
    spec.validate()
    spec.optimize(quantization=quantization)
    try:
        with published_dir(output) as tmp:
            spec.save(str(tmp))
            save_tokenizer(loaded.src_tokenizer, tokenizer_file(tmp, "src"))
            # One vocabulary for both languages (tokenizer.shared) is written once; the engine
            # reads tokenizer_src.json for both sides when there is no tokenizer_tgt.json.
            if loaded.tgt_tokenizer.to_str() != loaded.src_tokenizer.to_str():
                save_tokenizer(loaded.tgt_tokenizer, tokenizer_file(tmp, "tgt"))
            for name, table in ((CASING_FILE, loaded.casing), (SPELLING_FILE, loaded.spelling)):
                if table is not None:
                    save_word_table(table, tmp / name)
            split = loaded.checkpoint.parent / "split.json"  # for `validate --model DIR`
            if split.is_file():
                shutil.copy(split, tmp / "split.json")
            meta = {
                "format": 1,
                "run": loaded.checkpoint.parent.name,
                "checkpoint": str(loaded.checkpoint),
                "step": loaded.step,
                "quantization": quantization,
                "config": loaded.config.to_dict(),
            }
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TranslatorError(f"--output {output}: cannot write ({exc.strerror or exc})") from None
