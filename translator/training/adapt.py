"""A run that starts from another run's weights (`train.init_from`): fine-tuning, adaptation.

The child takes the parent's model and tokenizer sections, its tokenizers (byte for byte) and its
weights; its optimizer, schedule and step count start afresh. Its data is encoded with the
parent's tokenizers, so its prepared store is keyed by them.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from translator.config import Config, config_from_dict, given_settings
from translator.data.tokenizer import fingerprint
from translator.errors import CheckpointError, ConfigError
from translator.metrics import Logger
from translator.model.transformer import Transformer
from translator.run.lineage import RunCheckpoint, find_parent, read_parent_record
from translator.run.paths import RunPaths

log = logging.getLogger("translator")

FREE_KEYS = {
    "model": {"dropout", "attention_dropout"},  # regularisation, not the model's shape
    "tokenizer": {"dropout", "dropout_copies"},  # how training pairs are segmented
}
"""Keys of the inherited sections that a child may still set: none changes a weight's shape or
a token's id."""

DATA_DEFAULTS = (
    "lang_src", "lang_tgt", "normalize", "restore_accents", "max_len", "noise", "typo_words",
)  # fmt: skip
"""Keys of data: that a child takes from its parent unless it sets them: the languages and the
form of text the parent's tokenizers and positions were made for (its typed forms included: an
adapted model stays robust to the way people write)."""


def adapted_config(
    config_path: Path | None, overrides: list[str], weights_root: Path
) -> tuple[Config, RunCheckpoint]:
    """The child's config, its model and tokenizer sections the parent's, and the parent.

    A key of those sections that the config or `--set` gives a value other than the parent's is
    a one-line error naming it.
    """
    raw = given_settings(config_path, overrides)
    origin = str(config_path) if config_path is not None else "--set"
    own = config_from_dict(raw, origin)  # the child's own keys are checked first
    assert own.train.init_from is not None
    parent = find_parent(own.train.init_from, weights_root)
    try:
        inherited = config_from_dict(parent.state["config"], str(parent.checkpoint))
    except ConfigError as exc:
        raise CheckpointError(
            f"train.init_from: the parent's config is not usable: {exc}"
        ) from None
    if raw.get("data") is None:
        raw["data"] = {}
    for key in DATA_DEFAULTS:
        raw["data"].setdefault(key, getattr(inherited.data, key))
    for section, free in FREE_KEYS.items():
        given = raw.get(section) or {}
        theirs = getattr(inherited, section)
        mine = getattr(own, section)
        for key in given:
            if key in free or getattr(mine, key) == getattr(theirs, key):
                continue
            raise ConfigError(
                f"{origin}: {section}.{key} is {getattr(mine, key)!r} but the parent "
                f"{parent.name} has {getattr(theirs, key)!r}; a run made from another takes its "
                f"{section} section: remove {section}.{key}"
            )
        raw[section] = {
            **dataclasses.asdict(theirs),
            **{k: v for k, v in given.items() if k in free},
        }
    return config_from_dict(raw, origin), parent


def start_from_parent(parent: RunCheckpoint, paths: RunPaths, is_main: bool) -> None:
    """Before the data is prepared: the parent's tokenizers into the run (rank 0)."""
    if is_main:
        parent.copy_tokenizers(paths.weights_dir)


def load_parent_weights(
    model: Transformer, parent: RunCheckpoint, src_tok: Any, tgt_tok: Any
) -> None:
    """The parent's weights into `model`, after checking the vocabularies are the parent's."""
    for side, tok in (("src", src_tok), ("tgt", tgt_tok)):
        if parent.state["tokenizers"].get(side) != fingerprint(tok):
            raise CheckpointError(
                f"train.init_from: {parent.checkpoint} does not match its run's "
                f"{parent.tokenizer(side)} (another run's checkpoint?); give the parent's own "
                "run directory"
            )
    try:
        model.load_state_dict(parent.state["model"])
    except RuntimeError as exc:
        first = str(exc).splitlines()[1].strip() if "\n" in str(exc) else str(exc)
        raise CheckpointError(
            f"train.init_from: {parent.checkpoint} does not fit its own config ({first})"
        ) from None


def announce_parent(paths: RunPaths, logger: Logger, parent: RunCheckpoint | None) -> None:
    """Say where the run came from (its parent): on the terminal, and as text in TensorBoard."""
    record = parent.record("run") if parent is not None else read_parent_record(paths.weights_dir)
    if record is None:
        return
    if parent is not None:
        log.info(
            "starting from run %s: its weights and tokenizers; a new optimizer, schedule and "
            "step count",
            parent.describe(),
        )
    else:
        log.info("run %s was made from run %s (step %s)", paths.name, record["run"], record["step"])
    lines = "\n".join(f"- {k}: `{v}`" for k, v in record.items())
    logger.text("run/parent", f"made from another run:\n\n{lines}", 0)
