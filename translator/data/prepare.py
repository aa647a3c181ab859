"""Preparing a corpus once: read -> clean -> deduplicate -> split -> tokenizers -> encode -> store.

`translator prepare` runs it, and `train` when its data is not prepared yet. Each phase streams:
the cleaned text goes to a temporary file, duplicates are found by 64-bit hashes, the split is a
mask, the tokenizers learn from a stream (or a seeded sample), and pairs are encoded in chunks by
the tokenizers library's parallel batch encoder, straight into the store's flat arrays. Memory
grows by a few bytes per pair, not with the text.

A run records the store it trains on (weights/NAME/store.json), with copies of its tokenizers and
its split beside it, so `translate` needs no store and a resume reads no corpus.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from translator.config import Config
from translator.data.batching import BilingualDataset, weighted_count
from translator.data.build import prepare_store
from translator.data.clean import FilterStats
from translator.data.integrity import StoreDamaged, discard_damaged
from translator.data.read import Pair
from translator.data.store import (
    WORD_TABLES,
    Given,
    Store,
    config_ident,
    open_store,
)
from translator.data.testsets import EvalSet
from translator.data.tokenizer import load_tokenizer
from translator.durable import publish_copy, publish_text
from translator.errors import DataError
from translator.run.names import tokenizer_file
from translator.run.paths import RunPaths

log = logging.getLogger("translator")


@dataclass
class PreparedData:
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    train: BilingualDataset
    valid: BilingualDataset
    valid_pairs: list[Pair]
    """The raw text of each validation example, aligned with `valid`."""
    stats: FilterStats
    store: Path | None = None
    """The prepared store the datasets are mapped from."""
    train_entries: np.ndarray | None = None
    """The entry of data.source of each training pair (for their weights); None with one."""
    eval_sets: list[EvalSet] = field(default_factory=list)
    """`train.eval_sets`, scored beside the validation split during training."""


def prepare_data(config: Config, paths: RunPaths) -> PreparedData:
    """The run's data: from the store it recorded (a resume reads no corpus), else prepared now
    (keeping the split and tokenizers the run already has) and recorded."""
    store = _recorded_store(config, paths)
    if store is None:
        given = _given(paths)
        if paths.encoded.is_file():
            log.info(
                "run %s was prepared by an earlier version (encoded.npz): preparing its data "
                "store once, from its own split and tokenizers",
                paths.name,
            )
        store = prepare_store(config, given)
        _record(paths, store)
    return load_prepared(store)


def load_prepared(store: Store) -> PreparedData:
    """The datasets of `store`, memory-mapped, with its tokenizers and validation text."""
    src_tok, tgt_tok = store.tokenizers()
    return PreparedData(
        src_tok,
        tgt_tok,
        store.dataset("train"),
        store.dataset("valid"),
        store.valid_pairs(),
        store.stats(),
        store.path,
        store.entries("train"),
    )


def _recorded_store(config: Config, paths: RunPaths) -> Store | None:
    """The store recorded by the run, if it is still there and still fits the config."""
    if not paths.store_record.is_file():
        return None
    record = json.loads(paths.store_record.read_text(encoding="utf-8"))
    try:
        store = open_store(Path(record["path"]), record["key"])
    except StoreDamaged as damaged:
        return _prepare_again(config, paths, damaged)
    if store is None:
        log.info("the run's prepared store %s is gone: preparing it again", record["path"])
        return None
    try:
        ident = config_ident(config)
    except DataError as exc:  # a source moved away: the store holds all the run needs
        log.warning("%s; the run goes on with its prepared store %s", exc, store.path)
        return store
    recorded = store.meta["ident"]
    if ident["sources"] != recorded["sources"]:
        raise DataError(
            f"data.source: run {paths.name!r} was prepared from {source_names(recorded['sources'])}"
            f", but data.source now reads {source_names(ident['sources'])}: the data changed "
            "since the run started; resume it on the data it started with, or start another run "
            "on this data with --run NEW_NAME"
        )
    return store if ident == recorded else None  # other settings: prepare again, same split


def source_names(sources: list[Any]) -> str:
    """The files (or hub dataset) of a store's recorded sources, as a user gave them."""
    names = []
    for source in sources:
        kind, *files = source
        names += [
            f"{f[0]} ({f[1]:,} bytes)" if isinstance(f, list) and len(f) > 1 else str(f)
            for f in files
        ] or [kind]
    return ", ".join(names) or "nothing"


def _prepare_again(config: Config, paths: RunPaths, damaged: StoreDamaged) -> None:
    """A run's damaged store: set aside so the run prepares it again from its corpus (with its
    own split and tokenizers), or one line saying what to do when the corpus is not there."""
    try:
        config_ident(config)
    except DataError as exc:
        raise DataError(
            f"{damaged}, and run {paths.name}'s corpus is not there to prepare it again ({exc}); "
            "restore data.source, or copy the store again from the machine that made it"
        ) from None
    log.warning("%s: run %s prepares its data again into a fresh folder", damaged, paths.name)
    discard_damaged(damaged)


def _given(paths: RunPaths) -> Given:
    """The run's own tokenizers and split, when it has them (a resume, an earlier version's run,
    an export being validated)."""
    tokenizers = None
    if paths.tokenizer("src").is_file() and paths.tokenizer("tgt").is_file():
        tokenizers = (
            load_tokenizer(paths.tokenizer("src")),
            load_tokenizer(paths.tokenizer("tgt")),
        )
    if not paths.split.is_file():
        return Given(tokenizers)
    record = json.loads(paths.split.read_text(encoding="utf-8"))
    return Given(tokenizers, [int(i) for i in record["valid"]], int(record["n_pairs"]))


def _record(paths: RunPaths, store: Store) -> None:
    """Note the store in the run directory, beside copies of its tokenizers and split."""
    if not paths.weights_dir.is_dir():
        return
    for side in ("src", "tgt"):
        if not paths.tokenizer(side).is_file():
            publish_copy(tokenizer_file(store.path, side), paths.tokenizer(side))
    for name in WORD_TABLES:  # learnt from this run's data, not a parent's
        if (store.path / name).is_file() and not (paths.weights_dir / name).is_file():
            publish_copy(store.path / name, paths.weights_dir / name)
    if not paths.split.is_file():
        n_pairs = store.meta["n_pairs"]
        record = {"n_pairs": n_pairs, "seed": store.meta["ident"]["seed"]}
        _write_json(paths.split, {**record, "valid": store.valid_positions()})
    _write_json(paths.store_record, {"path": str(store.path.resolve()), "key": store.meta["key"]})


def _write_json(path: Path, record: dict[str, Any]) -> None:
    publish_text(path, json.dumps(record))


def data_summary(data: PreparedData, weights: list[float] | None = None) -> str:
    """The one-line account of the prepared data that `prepare` and `train` print; with the
    weights of data.source's entries, what each gives an epoch."""
    train, copies = f"{len(data.train):,}", data.train.copies
    n_copies = int(copies.max()) + 1 if copies is not None and len(copies) else 1
    if n_copies > 1:
        train = f"{len(data.train) // n_copies:,} (each in {n_copies} BPE-dropout encodings)"
    return (
        f"data: {data.stats.summary()}; {train} train / {len(data.valid):,} valid pairs"
        f"{_per_entry(data, weights or [], n_copies)}; "
        f"vocab {data.src_tokenizer.get_vocab_size():,} src / "
        f"{data.tgt_tokenizer.get_vocab_size():,} tgt"
    )


def entry_names(data: PreparedData) -> list[str]:
    """The name of each entry of data.source, in order."""
    return [name for name, _ in data.stats.per_source] or ["data.source"]


def entry_counts(data: PreparedData, n_entries: int) -> list[int]:
    """The training pairs of each entry of data.source (each counted once under BPE-dropout)."""
    copies = data.train.copies
    n_copies = int(copies.max()) + 1 if copies is not None and len(copies) else 1
    if data.train_entries is None:
        return [len(data.train) // n_copies]
    return (np.bincount(data.train_entries, minlength=n_entries) // n_copies).tolist()


def _per_entry(data: PreparedData, weights: list[float], n_copies: int) -> str:
    """`; an epoch: A 29,000 x 2 = 58,000 + B 115,965 x 0.25 = 28,991` (training pairs)."""
    if len(weights) < 2 and all(w == 1 for w in weights):
        return ""
    names, counts = entry_names(data), entry_counts(data, len(weights))
    parts = [
        f"{name} {n:,} x {w:g} = {weighted_count(n, w):,}"
        for name, n, w in zip(names, counts, weights, strict=False)
    ]
    return "; an epoch: " + " + ".join(parts)
