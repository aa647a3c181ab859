"""The Marian format as Hugging Face Transformers saves it (`MarianMTModel.save_pretrained`):
what its files are, how its weights are named, and how its vocabulary maps onto this tool's ids.

A Marian directory holds `config.json`, the weights (`model.safetensors` or `pytorch_model.bin`),
`source.spm` and `target.spm` (SentencePiece models), `vocab.json` (one vocabulary for both sides)
or `vocab.json` and `target_vocab.json` (`separate_vocabs`), `tokenizer_config.json` and often
`generation_config.json`.

Ids: Marian's vocabulary has </s> at 0, <unk> at 1 and <pad> (last, usually), and its decoder
starts from <pad>. This tool's ids have [UNK] 0, [PAD] 1, [SOS] 2, [EOS] 3 everywhere. So a
Marian vocabulary becomes [<unk>, <pad>, <pad> (as [SOS]), </s>, then every other id in order]:
`marian_ids[i]` is the Marian id of this tool's id i, and every row of an embedding, output layer
or logits bias is taken in that order. [PAD] and [SOS] are the one Marian <pad>: [SOS] starts the
decoder as <pad> did; neither is ever output (translator.inference.decode), as `generate`'s
`bad_words_ids` keeps <pad> out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from translator.errors import TranslatorError
from translator.specials import EOS, PAD, SOS, UNK

HF_EXTRA = 'pip install -e ".[hf]"'
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
OTHER_ARCHITECTURES = {
    "t5": "T5",
    "mt5": "mT5",
    "bart": "BART",
    "mbart": "mBART",
    "m2m_100": "M2M-100 / NLLB",
    "nllb-moe": "NLLB-MoE",
    "fsmt": "FSMT (fairseq WMT19)",
    "pegasus": "Pegasus",
    "bert": "BERT",
    "gpt2": "GPT-2",
    "llama": "Llama",
}
SUPPORTED = "translator import reads Marian models (MarianMTModel: Helsinki-NLP/opus-mt-*) only"
ACTIVATIONS = {"swish": "swish", "silu": "swish", "gelu": "gelu", "relu": "relu"}


@dataclass
class MarianDir:
    """A Marian model directory, read and checked: everything but the weights."""

    path: Path
    config: dict[str, Any]
    generation: dict[str, Any]
    tokenizer: dict[str, Any]
    src_vocab: dict[str, int]
    tgt_vocab: dict[str, int]
    weights: Path
    separate_vocabs: bool = False
    files: list[Path] = field(default_factory=list)

    @property
    def shared(self) -> bool:
        """One embedding for encoder, decoder and output (`share_encoder_decoder_embeddings`)."""
        return bool(self.config.get("share_encoder_decoder_embeddings", True))

    def language_codes(self) -> list[str]:
        """The target-language tokens (`>>ita<<`) of a multilingual model; [] for one language."""
        return [t for t in self.src_vocab if t.startswith(">>") and t.endswith("<<")]


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TranslatorError(
            f"{path}: not readable JSON ({exc}); download the model again"
        ) from None
    if not isinstance(data, dict):
        raise TranslatorError(f"{path}: expected a JSON object; download the model again")
    return data


def read_marian_dir(path: Path) -> MarianDir:
    """Read and check a Marian directory; each way it can be wrong is one line naming the file."""
    config_path = path / "config.json"
    if not config_path.is_file():
        raise TranslatorError(
            f"{path}: no config.json; give a directory as transformers saves a model "
            "(save_pretrained) or a hub name such as Helsinki-NLP/opus-mt-en-it"
        )
    config = read_json(config_path)
    kind = str(config.get("model_type", ""))
    if kind != "marian":
        name = OTHER_ARCHITECTURES.get(kind, kind or "unknown")
        arch = ", ".join(config.get("architectures") or []) or "no architectures listed"
        raise TranslatorError(f"{path} holds a {name} model ({arch}); {SUPPORTED}")
    tok_path = path / "tokenizer_config.json"
    tokenizer = read_json(tok_path) if tok_path.is_file() else {}
    separate = bool(tokenizer.get("separate_vocabs", False))
    needed = ["source.spm", "target.spm", "vocab.json"] + (
        ["target_vocab.json"] if separate else []
    )
    for name in needed:
        if not (path / name).is_file():
            what = "SentencePiece model" if name.endswith(".spm") else "vocabulary"
            raise TranslatorError(
                f"{path}: {name} is missing (the model's {what}); copy the whole model directory"
            )
    weights = next((path / w for w in WEIGHT_FILES if (path / w).is_file()), None)
    if weights is None:
        raise TranslatorError(
            f"{path}: no weights ({' or '.join(WEIGHT_FILES)}); copy the whole model directory "
            "(a sharded model: load and save_pretrained it as one file first)"
        )
    src_vocab = _vocab(path / "vocab.json")
    tgt_vocab = _vocab(path / "target_vocab.json") if separate else src_vocab
    generation_path = path / "generation_config.json"
    generation = read_json(generation_path) if generation_path.is_file() else {}
    files = [config_path, weights, *(path / n for n in needed)]
    files += [p for p in (tok_path, generation_path) if p.is_file()]
    return MarianDir(
        path, config, generation, tokenizer, src_vocab, tgt_vocab, weights, separate, files
    )


def _vocab(path: Path) -> dict[str, int]:
    vocab = read_json(path)
    if not all(isinstance(i, int) for i in vocab.values()):
        raise TranslatorError(f"{path}: a vocabulary maps pieces to integer ids; this one does not")
    return vocab


def ids_in_our_order(
    vocab: dict[str, int], size: int, unk: int, pad: int, eos: int, start: int
) -> tuple[list[str], list[int]]:
    """This tool's pieces (specials first, under its names) and, for each, its Marian id.

    `size` is the model's embedding rows: ids no piece names (a vocabulary padded to a round
    size) keep their row as `<unused-N>`, a piece no text becomes."""
    by_id = {i: p for p, i in vocab.items()}
    for name, i in (("<unk>", unk), ("pad", pad), ("eos", eos)):
        if not 0 <= i < size:
            raise TranslatorError(f"the {name} id {i} is outside the vocabulary of {size}")
    rest = [i for i in range(size) if i not in (unk, pad, eos)]
    pieces = [UNK, PAD, SOS, EOS] + [by_id.get(i, f"<unused-{i}>") for i in rest]
    return pieces, [unk, pad, start, eos, *rest]


def marian_order(marian_ids: list[int]) -> list[int]:
    """The inverse: for each Marian id, this tool's id whose row it takes on export ([SOS]'s row
    for <pad>: the decoder starts from it)."""
    inverse: dict[int, int] = {}
    for ours, theirs in enumerate(marian_ids):
        if ours != 1:  # [PAD] and [SOS] are one Marian <pad>: [SOS] holds the row the decoder uses
            inverse.setdefault(theirs, ours)
    return [inverse[j] for j in range(len(inverse))]


def weight_names(encoder_layers: int, decoder_layers: int) -> dict[str, str]:
    """This tool's parameter name -> transformers' name, for everything but the embeddings and
    the output layer (they need the vocabulary's order)."""
    names: dict[str, str] = {}
    projections = ("q_proj", "k_proj", "v_proj", "out_proj")
    for i in range(encoder_layers):
        ours, theirs = f"encoder_layers.{i}", f"model.encoder.layers.{i}"
        for p in projections:
            _linear(names, f"{ours}.self_attn.{p}", f"{theirs}.self_attn.{p}")
        _linear(names, f"{ours}.attn_block.norm", f"{theirs}.self_attn_layer_norm")
        _linear(names, f"{ours}.ffn.fc1", f"{theirs}.fc1")
        _linear(names, f"{ours}.ffn.fc2", f"{theirs}.fc2")
        _linear(names, f"{ours}.ffn_block.norm", f"{theirs}.final_layer_norm")
    for i in range(decoder_layers):
        ours, theirs = f"decoder_layers.{i}", f"model.decoder.layers.{i}"
        for p in projections:
            _linear(names, f"{ours}.self_attn.{p}", f"{theirs}.self_attn.{p}")
            _linear(names, f"{ours}.cross_attn.{p}", f"{theirs}.encoder_attn.{p}")
        _linear(names, f"{ours}.self_block.norm", f"{theirs}.self_attn_layer_norm")
        _linear(names, f"{ours}.cross_block.norm", f"{theirs}.encoder_attn_layer_norm")
        _linear(names, f"{ours}.ffn.fc1", f"{theirs}.fc1")
        _linear(names, f"{ours}.ffn.fc2", f"{theirs}.fc2")
        _linear(names, f"{ours}.ffn_block.norm", f"{theirs}.final_layer_norm")
    return names


def _linear(names: dict[str, str], ours: str, theirs: str) -> None:
    names[f"{ours}.weight"] = f"{theirs}.weight"
    names[f"{ours}.bias"] = f"{theirs}.bias"


def model_settings(config: dict[str, Any], where: Path) -> dict[str, Any]:
    """The `model:` section of a run for a Marian config.json; what this tool cannot build is one
    line naming the key."""
    get = config.get
    for ours, theirs in (("heads", "attention_heads"), ("feed-forward width", "ffn_dim")):
        if get(f"encoder_{theirs}") != get(f"decoder_{theirs}"):
            raise TranslatorError(
                f"{where}: encoder_{theirs} {get(f'encoder_{theirs}')} and decoder_{theirs} "
                f"{get(f'decoder_{theirs}')} differ; this tool's model has one {ours} for both"
            )
    activation = str(get("activation_function", "swish"))
    if activation not in ACTIVATIONS:
        raise TranslatorError(
            f"{where}: activation_function {activation!r} is not supported "
            f"(supported: {', '.join(ACTIVATIONS)})"
        )
    if get("normalize_before") or get("add_final_layer_norm"):
        raise TranslatorError(f"{where}: a pre-norm Marian variant is not supported")
    return {
        "d_model": int(get("d_model", 512)),
        "n_heads": int(get("encoder_attention_heads", 8)),
        "encoder_layers": int(get("encoder_layers", 6)),
        "decoder_layers": int(get("decoder_layers", 6)),
        "d_ff": int(get("encoder_ffn_dim", 2048)),
        "dropout": float(get("dropout", 0.1)),
        "attention_dropout": float(get("attention_dropout", 0.0)),
        "norm": "post",
        "activation": ACTIVATIONS[activation],
        "positions": "sinusoidal_halves",
        "max_positions": int(get("max_position_embeddings", 512)),
        "tie_embeddings": bool(get("tie_word_embeddings", True)),
        "scale_embeddings": bool(get("scale_embedding", True)),
        "source_sos": False,
    }


SEARCH_KEYS = ("do_sample", "num_beam_groups", "no_repeat_ngram_size", "repetition_penalty")


def decode_settings(generation: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The `decode:` section: the model's own search (generation_config.json, else config.json)."""

    def get(key: str, default: Any) -> Any:
        return generation.get(key, config.get(key, default))

    max_length = int(get("max_length", 512) or 512)
    positions = int(config.get("max_position_embeddings", 512))
    return {
        "beam": int(get("num_beams", 1) or 1),
        "alpha": float(get("length_penalty", 1.0)),
        "search": "transformers",
        "max_len_a": 0.0,
        "max_len_b": max(1, min(max_length, positions) - 1),
        "ban_unk": False,
        "mbr": False,
        "no_repeat_ngram": int(get("no_repeat_ngram_size", 0) or 0),
        "max_run": 0,
        "recase": False,  # the model's own reading of capitals, as it was published
    }


def unsupported_generation(generation: dict[str, Any]) -> list[str]:
    """Settings of generation_config.json that the search here does not reproduce."""
    found = []
    if generation.get("early_stopping") not in (None, False):
        found.append(f"early_stopping={generation['early_stopping']}")
    if generation.get("renormalize_logits"):
        found.append("renormalize_logits")
    for key in ("do_sample", "repetition_penalty", "num_beam_groups", "min_length"):
        if generation.get(key) not in (None, False, 0, 1, 1.0):
            found.append(f"{key}={generation[key]}")
    return found
