"""`translator import`: a Marian model (a directory, or a hub name) as an ordinary run.

The run directory gets what a trained run has: config.yaml (the model's shape and its own
decoding), tokenizer_src.json and tokenizer_tgt.json (the sentencepiece kind), latest.pt (step
0), and imported.json: where it came from, the revision, and each file's SHA-256. Everything is
read and checked before anything is written, then the folder is published whole, so a bad input
leaves nothing under weights/.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from translator.config import config_from_dict, save_config
from translator.data.sentencepiece import SentencePieceTokenizer
from translator.data.tokenizer import fingerprint, save_tokenizer
from translator.durable import file_digest, publish_text, published_dir
from translator.errors import TranslatorError
from translator.interop.marian import (
    HF_EXTRA,
    MarianDir,
    decode_settings,
    ids_in_our_order,
    model_settings,
    read_marian_dir,
    unsupported_generation,
    weight_names,
)
from translator.model.transformer import build_model
from translator.run.checkpoint import save_checkpoint
from translator.run.names import IMPORTED, tokenizer_file
from translator.run.paths import check_run_name

log = logging.getLogger("translator")
HUB_NAME = re.compile(r"^[\w.-]+/[\w.-]+$")
HUB_FILES = ["*.json", "*.spm", "model.safetensors", "README.md"]


def import_model(
    source: str,
    run: str,
    weights_root: Path = Path("weights"),
    target_language: str | None = None,
    revision: str | None = None,
) -> Path:
    """Import `source` into weights_root/run; the run's directory."""
    check_run_name(run)
    run_dir = weights_root / run
    if run_dir.exists():
        raise TranslatorError(
            f"--run {run}: {run_dir} already exists; choose another name or remove it"
        )
    path, origin = resolve_source(source, revision)
    marian = read_marian_dir(path)
    prefix = _target_token(marian, target_language)
    config = _run_config(marian)
    src_tok, tgt_tok, src_ids, tgt_ids = _tokenizers(marian, prefix)
    state = _state(marian, config, src_ids, tgt_ids)
    for warning in unsupported_generation(marian.generation):
        log.warning("warning: generation_config.json sets %s, which decoding here ignores", warning)
    record = {
        "source": source,
        **origin,
        "format": "transformers-marian",
        "files": {p.name: file_digest(p) for p in marian.files},
        "target_language": prefix,
    }
    checkpoint = {
        "model": state,
        "progress": {"step": 0, "epoch": 0},
        "optimizer": {},  # none: a child trains from it with its own (train --init-from)
        "rng": {},
        "config": config.to_dict(),
        "tokenizers": {"src": fingerprint(src_tok), "tgt": fingerprint(tgt_tok)},  # type: ignore[arg-type]
        "imported": record,
    }
    weights_root.mkdir(parents=True, exist_ok=True)
    try:
        with published_dir(run_dir) as tmp:
            save_config(config, tmp / "config.yaml")
            save_tokenizer(src_tok, tokenizer_file(tmp, "src"))  # type: ignore[arg-type]
            save_tokenizer(tgt_tok, tokenizer_file(tmp, "tgt"))  # type: ignore[arg-type]
            save_checkpoint(checkpoint, tmp / "latest.pt")
            publish_text(tmp / IMPORTED, json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        raise TranslatorError(f"cannot write {run_dir}: {exc.strerror or exc}") from None
    m, d = config.model, config.decode
    weights = sum(t.numel() for t in {id(t): t for t in state.values()}.values())  # tied: once
    log.info(
        "imported %s as run %s (%s/): %.1fM weights, d_model %d, %d+%d layers, vocabulary %s; "
        "decoding: beam %d, length penalty %s\n"
        'translate with: translator translate --run %s "Hello"',
        source, run, run_dir, weights / 1e6, m.d_model, m.encoder_layers, m.decoder_layers,
        f"{src_tok.get_vocab_size():,}", d.beam, d.alpha, run,
    )  # fmt: skip
    return run_dir


def resolve_source(source: str, revision: str | None) -> tuple[Path, dict[str, Any]]:
    """A local directory as it is; a hub name fetched (or found in the local cache)."""
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir():
            raise TranslatorError(f"{source}: not a directory; give the model's directory")
        return path, {"path": str(path.resolve())}
    if not HUB_NAME.match(source):
        raise TranslatorError(
            f"{source}: no such directory (nor a hub name such as Helsinki-NLP/opus-mt-en-it)"
        )
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise TranslatorError(f"a hub name needs huggingface_hub: {HF_EXTRA}") from None
    fetched = None
    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "")
    for local_only in (True,) if offline else (False, True):  # the hub, else the local cache
        try:
            fetched = snapshot_download(
                source, revision=revision, allow_patterns=HUB_FILES, local_files_only=local_only
            )
            break
        except Exception as exc:  # network errors, a missing repository, an offline cache miss
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if "RepositoryNotFound" in reason or "RevisionNotFound" in reason:
                raise TranslatorError(f"{source}: not on the hub ({reason})") from None
    if fetched is None:
        raise TranslatorError(
            f"{source}: cannot fetch it (no network, and not in the Hugging Face cache); "
            "download the model on a machine with a network (huggingface-cli download "
            f"{source} --local-dir DIR), copy DIR here and run: translator import DIR --run NAME"
        )
    snapshot = Path(fetched)
    return snapshot, {"hub": source, "revision": snapshot.name, "path": str(snapshot)}


def _target_token(marian: MarianDir, target_language: str | None) -> str | None:
    codes = marian.language_codes()
    if not codes:
        if target_language:
            raise TranslatorError(
                f"--target-language {target_language}: {marian.path} translates into one "
                "language only; leave the option out"
            )
        return None
    if not target_language:
        italian = [c for c in codes if c[2:-2] in ("ita", "it")]
        raise TranslatorError(
            f"{marian.path} is multilingual ({len(codes)} target languages); choose one with "
            f"--target-language {(italian or codes)[0][2:-2]}"
        )
    token = f">>{target_language.strip('<>')}<<"
    if token not in codes:
        raise TranslatorError(
            f"--target-language {target_language}: {token} is not one of the model's "
            f"{len(codes)} languages ({', '.join(codes[:8])}{', ...' if len(codes) > 8 else ''})"
        )
    return token


def _run_config(marian: MarianDir) -> Any:
    cfg = marian.config
    where = marian.path / "config.json"
    model = model_settings(cfg, where)
    raw = {
        "tokenizer": {"kind": "sentencepiece", "shared": marian.shared},
        "model": model,
        "data": {"max_len": min(128, model["max_positions"] - 2)},
        "decode": decode_settings(marian.generation, cfg),
    }
    return config_from_dict(raw, origin=str(where))


def _tokenizers(
    marian: MarianDir, prefix: str | None
) -> tuple[SentencePieceTokenizer, SentencePieceTokenizer, list[int], list[int]]:
    cfg = marian.config
    pad = int(cfg.get("pad_token_id", len(marian.src_vocab) - 1))
    eos = int(cfg.get("eos_token_id", 0))
    start = int(cfg.get("decoder_start_token_id", pad) or pad)
    src_size = int(cfg.get("vocab_size", len(marian.src_vocab)))
    tgt_size = int(cfg.get("decoder_vocab_size") or src_size) if not marian.shared else src_size
    sides = []
    for vocab, size, spm in (
        (marian.src_vocab, src_size, "source.spm"),
        (marian.tgt_vocab, tgt_size, "target.spm"),
    ):
        if "<unk>" not in vocab:
            raise TranslatorError(f"{marian.path}: the vocabulary has no <unk>")
        pieces, ids = ids_in_our_order(vocab, size, vocab["<unk>"], pad, eos, start)
        sides.append((pieces, ids, (marian.path / spm).read_bytes()))
    try:
        src = SentencePieceTokenizer(sides[0][2], sides[0][0], prefix=prefix)
        tgt = SentencePieceTokenizer(sides[1][2], sides[1][0])
    except RuntimeError as exc:  # the library's answer to a file that is not a model
        raise TranslatorError(
            f"{marian.path}: a .spm file is not a SentencePiece model ({exc})"
        ) from None
    return src, tgt, sides[0][1], sides[1][1]


def _state(
    marian: MarianDir, config: Any, src_ids: list[int], tgt_ids: list[int]
) -> dict[str, torch.Tensor]:
    """This tool's state dict, each tensor read from the weight file once, rows reordered."""
    get = _reader(marian.weights)
    m = config.model
    state: dict[str, torch.Tensor] = {}
    for ours, theirs in weight_names(m.encoder_layers, m.decoder_layers).items():
        state[ours] = get(theirs)
    shared = get("model.shared.weight", "model.encoder.embed_tokens.weight")
    ids = torch.tensor(src_ids)
    state["src_embed.tokens.weight"] = shared[ids]
    if marian.shared:
        state["tgt_embed.tokens.weight"] = state["src_embed.tokens.weight"]
    else:
        tgt = get("model.decoder.embed_tokens.weight")
        state["tgt_embed.tokens.weight"] = tgt[torch.tensor(tgt_ids)]
        del tgt
    del shared
    out_ids = torch.tensor(tgt_ids)
    if m.tie_embeddings:
        state["output.weight"] = state["tgt_embed.tokens.weight"]
    else:
        state["output.weight"] = get("lm_head.weight")[out_ids]
    state["output.bias"] = get("final_logits_bias").reshape(-1)[out_ids]
    _check_positions(get, m)
    _check_shapes(state, config, len(src_ids), len(tgt_ids), marian.weights)
    return state


def _reader(weights: Path) -> Callable[..., torch.Tensor]:
    """get(name, *alternatives): one tensor of the weight file, as float32."""
    try:
        if weights.suffix == ".safetensors":
            try:
                from safetensors import safe_open
            except ImportError:
                raise TranslatorError(f"{weights.name} needs safetensors: {HF_EXTRA}") from None
            handle = safe_open(str(weights), "pt")
            names = set(handle.keys())
            load = handle.get_tensor
        else:
            table = torch.load(weights, map_location="cpu", weights_only=True, mmap=True)
            names = set(table)
            load = table.__getitem__
    except TranslatorError:
        raise
    except Exception as exc:  # a truncated or foreign file: each library says it its own way
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TranslatorError(
            f"{weights}: not a readable weight file ({first}); download the model again"
        ) from None

    def get(*candidates: str) -> torch.Tensor:
        for name in candidates:
            if name in names:
                try:
                    return load(name).float()
                except Exception as exc:
                    raise TranslatorError(
                        f"{weights}: {name} cannot be read ({exc}); download the model again"
                    ) from None
        raise TranslatorError(
            f"{weights}: no {candidates[0]}; not the weights of a Marian model of this config"
        )

    get.names = names  # type: ignore[attr-defined]
    return get


def _check_positions(get: Callable[..., torch.Tensor], m: Any) -> None:
    """A file that stores its position table must hold Marian's sinusoids, as the model here
    computes them."""
    from translator.model.transformer import Embedding

    name = "model.encoder.embed_positions.weight"
    if name not in get.names:  # type: ignore[attr-defined]
        return
    table = get(name)
    ours = Embedding(1, m).positions[: table.size(0)]
    if table.shape != ours.shape or not torch.allclose(table, ours, atol=1e-4):
        raise TranslatorError(
            f"{name}: the position table is not Marian's sinusoids; this model cannot be read"
        )


def _check_shapes(
    state: dict[str, torch.Tensor], config: Any, src_size: int, tgt_size: int, weights: Path
) -> None:
    """Every tensor has the shape the run's model will have (built without memory: on meta)."""
    with torch.device("meta"):
        model = build_model(config.model, src_size, tgt_size, shared_vocab=config.tokenizer.shared)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    if missing:
        raise TranslatorError(f"{weights}: no weights for {missing[0]} (and {len(missing)} more)")
    for name, tensor in state.items():
        if name not in expected:
            raise TranslatorError(f"{weights}: {name} has no place in the model")
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise TranslatorError(
                f"{weights}: {name} is {tuple(tensor.shape)}, the config says "
                f"{tuple(expected[name].shape)}; the weights and config.json disagree"
            )
