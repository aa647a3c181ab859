"""Prediction: load a trained run for inference and translate text in batches.

Loading a run for `translate` needs only its weights directory (checkpoint, tokenizers): no corpus,
no `datasets`, no TensorBoard.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from tokenizers import Tokenizer

from translator.config import Config, DecodeConfig, apply_override, config_from_dict, read_yaml
from translator.data.casing import load_casing
from translator.data.spelling import load_spelling
from translator.data.tokenizer import decode_ids, fingerprint, load_tokenizer
from translator.durable import publish_text
from translator.errors import CheckpointError, ConfigError
from translator.inference.attention import Head, translation_figure
from translator.inference.decode import translate_ids
from translator.inference.segment import layout
from translator.inference.text import encode_sources, translate_texts  # noqa: F401  (encode_sources: re-exported)
from translator.model.transformer import Transformer, build_model
from translator.run.checkpoint import load_checkpoint
from translator.run.names import tokenizer_file
from translator.specials import PAD_ID

log = logging.getLogger("translator")


# --------------------------------------------------------------------------- loading a run


@dataclass
class LoadedModel:
    """A checkpoint ready to translate: its model (eval mode), config and tokenizers."""

    model: Transformer
    config: Config
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    checkpoint: Path
    step: int
    device: torch.device
    casing: dict[str, str] | None = None
    """The run's casing table (casing.json; None for a run made before it existed)."""
    spelling: dict[str, int] | None = None
    """The run's word counts (spelling.json; None for a run made before it existed)."""

    @property
    def max_source_tokens(self) -> int:
        """Longest source the position table takes, in words ([SOS]/[EOS] excluded)."""
        return self.config.model.max_positions - 2


def load_model(checkpoint: Path, run_dir: Path, device: torch.device) -> LoadedModel:
    """Build the checkpoint's model from its own config and the run's tokenizers."""
    state = load_checkpoint(checkpoint, map_location="cpu")
    try:
        return _build_loaded(state, checkpoint, run_dir, device)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(
            f"{checkpoint}: incomplete or foreign checkpoint ({type(exc).__name__}: {exc}); "
            "use another checkpoint of the run"
        ) from None


def _build_loaded(
    state: dict, checkpoint: Path, run_dir: Path, device: torch.device
) -> LoadedModel:
    config = config_from_dict(state["config"], origin=f"{checkpoint} (config)")
    src_tok, tgt_tok = (load_run_tokenizer(run_dir, side, checkpoint) for side in ("src", "tgt"))
    for side, tok in (("src", src_tok), ("tgt", tgt_tok)):
        if state["tokenizers"][side] != fingerprint(tok):
            raise CheckpointError(
                f"{checkpoint}: its {side} vocabulary differs from "
                f"{tokenizer_file(run_dir, side)}; the checkpoint belongs to another run"
            )
    model = build_model(
        config.model,
        src_tok.get_vocab_size(),
        tgt_tok.get_vocab_size(),
        shared_vocab=config.tokenizer.shared,
    )
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        detail = str(exc).splitlines()[1].strip() if "\n" in str(exc) else str(exc)
        raise CheckpointError(f"{checkpoint}: weights do not fit its config ({detail})") from None
    model.to(device).eval()
    step = int(state["progress"]["step"])
    casing, spelling = load_casing(run_dir), load_spelling(run_dir)
    return LoadedModel(model, config, src_tok, tgt_tok, checkpoint, step, device, casing, spelling)


def load_run_tokenizer(run_dir: Path, side: str, checkpoint: Path) -> Tokenizer:
    """The run's tokenizer for `side`, with an actionable error when it is missing or bad."""
    path = tokenizer_file(run_dir, side)
    if not path.is_file():
        raise CheckpointError(
            f"{checkpoint}: no {path.name} in {run_dir}; keep a checkpoint in its run directory "
            "(weights/NAME/) beside the run's tokenizers"
        )
    try:
        return load_tokenizer(path)
    except Exception as exc:  # tokenizers raises plain Exceptions for a bad file
        raise CheckpointError(f"{path}: not a readable tokenizer ({exc})") from None


def override_config(
    config: Config,
    config_path: Path | None,
    overrides: Iterable[str],
    command: str,
    sections: tuple[str, ...] = ("data", "decode"),
) -> Config:
    """The run's config with the `sections` settings of `config_path` and `--set` applied."""
    raw = config.to_dict()
    if config_path is not None:
        for section, values in read_yaml(config_path).items():
            if section in sections and values is not None:
                if not isinstance(values, dict):
                    raise ConfigError(f"{config_path}: section {section!r} must be a mapping")
                raw[section].update(values)
    for item in overrides:
        if item.partition("=")[0].strip().split(".")[0] not in sections:
            allowed = " and ".join(f"{s}.*" for s in sections)
            raise ConfigError(
                f"--set {item!r}: {command} takes only {allowed} settings; "
                "the model and its training come from the checkpoint"
            )
        apply_override(raw, item)
    return config_from_dict(raw, origin=str(config_path or "--set"))


# --------------------------------------------------------------------------- translating


def decode_in_batches(
    model: Transformer,
    sources: list[list[int]],
    cfg: DecodeConfig,
    device: torch.device,
    beam: int | None = None,
    progress: bool = False,
    detokenize: Callable[[list[int]], str] | None = None,
    source_chars: list[int] | None = None,
) -> list[list[int]]:
    """Output ids for each encoder input, in input order; batches hold sentences of like length.

    `detokenize` (ids to text) is needed by `decode.mbr`, which compares the hypotheses' texts;
    `source_chars` (each source's length as typed) bounds its choice (`translate_ids`).
    """
    from tqdm import tqdm

    order = sorted(range(len(sources)), key=lambda i: len(sources[i]), reverse=True)
    outputs: list[list[int]] = [[] for _ in sources]
    beam = cfg.beam if beam is None else beam
    with tqdm(
        total=len(sources),
        unit="sent",
        desc="greedy" if beam == 1 else f"beam {beam}",
        disable=None if progress else True,
        dynamic_ncols=True,
        file=sys.stderr,
    ) as bar:
        for start in range(0, len(order), cfg.batch_size):
            rows = order[start : start + cfg.batch_size]
            src = torch.nn.utils.rnn.pad_sequence(
                [torch.tensor(sources[i]) for i in rows], batch_first=True, padding_value=PAD_ID
            ).to(device)  # (B, S)
            chars = [source_chars[i] for i in rows] if source_chars else None
            outs = translate_ids(model, src, cfg, beam, detokenize, chars)
            for i, out in zip(rows, outs, strict=True):
                outputs[i] = out
            bar.update(len(rows))
    return outputs


def translate_sentences(
    loaded: LoadedModel,
    sentences: list[str],
    beam: int | None = None,
    first_line: int | list[int] = 1,
) -> list[str]:
    """Translations in input order; an empty or blank sentence gives an empty string."""
    return translate_texts(
        sentences,
        loaded.src_tokenizer,
        loaded.tgt_tokenizer,
        loaded.max_source_tokens,
        lambda sources, chars: decode_in_batches(
            loaded.model,
            sources,
            loaded.config.decode,
            loaded.device,
            beam,
            detokenize=partial(decode_ids, loaded.tgt_tokenizer),
            source_chars=chars,
        ),
        first_line,
        recase=loaded.config.decode.recase,
        casing=loaded.casing if loaded.config.decode.truecase else None,
        spelling=loaded.spelling if loaded.config.decode.respell else None,
        split=loaded.config.decode.split_sentences,
    )


def save_attention(
    loaded: LoadedModel,
    sentence: str,
    path: Path,
    beam: int | None = None,
    layer: int | None = None,
    self_attention: bool = False,
    head: Head = None,
) -> None:
    """Translate `sentence` and save a figure of its attention maps to `path` (format by suffix;
    a file object gets PNG): each head's map, or the one `head` names ("mean": their average).
    Of a text of several sentences, the first sentence's maps (each is translated alone)."""
    cfg = loaded.config.decode
    pieces = layout(sentence, cfg.split_sentences).pieces
    sentence = pieces[0] if pieces else sentence
    src_ids = encode_sources(loaded.src_tokenizer, [sentence], loaded.max_source_tokens)[0]
    src = torch.tensor([src_ids], device=loaded.device)  # (1, S)
    detokenize = partial(decode_ids, loaded.tgt_tokenizer)
    output = translate_ids(loaded.model, src, cfg, beam, detokenize, [len(sentence)])[0]
    fig = translation_figure(
        loaded.model,
        src_ids,
        output,
        loaded.src_tokenizer,
        loaded.tgt_tokenizer,
        cfg,
        layer,
        self_attention,
        head,
    )
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise ConfigError(f"--attention {path}: cannot write ({exc.strerror or exc})") from None
    except ValueError as exc:  # an unknown image format
        raise ConfigError(f"--attention {path}: {exc}") from None


def write_lines(path: Path, lines: list[str]) -> None:
    """Write one line per entry (`--output`), whole (durable.py); an unwritable path is a
    one-line ConfigError."""
    try:
        publish_text(path, "".join(line + "\n" for line in lines))
    except OSError as exc:
        raise ConfigError(f"--output {path}: cannot write ({exc.strerror or exc})") from None


def resolve_beam(beam: int | None, config: Config) -> int:
    """The `--beam` option, else the config's decode.beam; at least 1."""
    beam = config.decode.beam if beam is None else beam
    if beam < 1:
        raise ConfigError(f"--beam {beam}: the beam size must be at least 1 (1 = greedy)")
    return beam
