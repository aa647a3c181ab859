"""Building a prepared store, phase by phase, each streaming over the corpus (see prepare.py).

read + clean   sources -> chunks -> a pool of processes -> clean.tsv + a hash per pair
deduplicate    numpy over the hashes: a mask
split          a seeded mask over the kept pairs (or the run's own split)
tokenizers     trained from a stream of the training pairs (a seeded sample when large)
encode         chunks through the tokenizers' parallel batch encoder -> flat id arrays
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from typing import Any

import numpy as np
from tokenizers import Tokenizer
from tqdm import tqdm

from translator.config import Config, TokenizerConfig
from translator.data.augment import iter_joined, iter_swapped
from translator.data.casing import CASING_FILE, learn_casing
from translator.data.clean import (
    FilterStats,
    first_occurrences,
    make_cleaner,
    split_mask,
)
from translator.data.corpus import CHUNK, CleanCorpus, bar, chunks
from translator.data.encode import TrainWriter, encode_ahead, for_clean_text
from translator.data.integrity import StoreDamaged, discard_damaged
from translator.data.read import Pair, Source, iter_source, resolve_sources
from translator.data.spelling import SPELLING_FILE, counting_words
from translator.data.store import (
    SOURCE_DTYPE,
    Given,
    Store,
    StoreWriter,
    config_ident,
    open_store,
    store_key,
    store_root,
)
from translator.data.tokenizer import train_tokenizer
from translator.data.typed import choose_forms, form_counts, present_drawn
from translator.errors import DataError, TranslatorError

log = logging.getLogger("translator")


class PrepareInterrupted(TranslatorError):
    """Ctrl-C or SIGTERM while preparing: nothing half-written is kept."""

    exit_code = 130


def prepare_store(config: Config, given: Given | None = None) -> Store:
    """The store for `config` (and what the run already has), prepared now unless it exists."""
    given = given or Given()
    ident = config_ident(config)
    key = store_key(ident, given)
    final = store_root(config) / key[:24]
    try:
        store = open_store(final, key)
    except StoreDamaged as damaged:
        log.warning("%s: preparing the data again into a fresh folder", damaged)
        discard_damaged(damaged)
        store = None
    if store is not None:
        log.info("prepared data: %s (ready)", final)
        return store
    start = time.perf_counter()
    try:
        with _terminate_as_interrupt(), StoreWriter(final) as writer:
            if writer.stale:
                log.info("an interrupted prepare of this data left a partial store: starting over")
            store = _build(config, ident, key, given, writer)
    except KeyboardInterrupt:
        raise PrepareInterrupted(
            f"interrupted while preparing the data; nothing was kept in {final.parent}, and the "
            "next run prepares it from the start"
        ) from None
    log.info("prepared data in %.1f s: %s", time.perf_counter() - start, final)
    return store


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt meanwhile (as Ctrl-C does), so cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _build(
    config: Config, ident: dict[str, Any], key: str, given: Given, writer: StoreWriter
) -> Store:
    cfg = config.data
    phases = Phases()
    sources = resolve_sources(cfg)
    stats = FilterStats()
    # The accent lexicon is counted on the corpus's first `tokenizer.train_sample` pairs: all of
    # a corpus up to that size, and plenty of each accented word's spellings beyond it.
    lexicon_pairs = islice(_all_pairs(sources, config), config.tokenizer.train_sample)
    cleaner = make_cleaner(cfg, lexicon_pairs) if cfg.restore_accents else None
    corpus = CleanCorpus(writer.tmp / "clean.tsv")
    hashes = corpus.write(sources, config, cleaner or make_cleaner(cfg), stats)
    phases.done("read + clean")
    keep = first_occurrences(hashes) if cfg.dedup else np.ones(len(hashes), dtype=bool)
    del hashes
    stats.duplicate = int((~keep).sum())
    corpus.keep = keep
    n_pairs = int(keep.sum())
    valid = _valid_mask(n_pairs, config, given)
    if n_pairs - int(valid.sum()) == 0:
        raise DataError(
            f"data.source {cfg.source}: no training pairs left after filtering "
            f"({stats.summary()}); check data.lang_src/lang_tgt"
        )
    if cfg.noise:
        corpus.forms = choose_forms(~valid, cfg.noise, config.train.seed)
        corpus.noise_seed, corpus.typo_words = config.train.seed, cfg.typo_words
        stats.forms = form_counts(corpus.forms)
    phases.done("deduplicate + split")
    tokenizers = given.tokenizers or train_tokenizers(corpus, ~valid, config)
    writer.set_vocab_size(max(t.get_vocab_size() for t in tokenizers))
    phases.done("tokenizers")
    sample = _sample(~valid, config.tokenizer.train_sample, config.train.seed)
    words: Counter[str] = Counter()
    casing = learn_casing(counting_words(words, (src for src, _ in corpus.subset(sample))))
    tables = {CASING_FILE: casing, SPELLING_FILE: dict(sorted(words.items()))}
    phases.done("casing + spelling")
    valid_pairs = _encode(corpus, valid, tokenizers, config, writer, stats, phases)
    if writer.counts["train"] == 0:
        raise DataError(
            f"data.source {cfg.source}: no training pairs left after filtering "
            f"({stats.summary()}); check data.lang_src/lang_tgt and data.max_len"
        )
    meta = {"key": key, "ident": ident, "given": given.fingerprint(), "n_pairs": n_pairs,
            "stats": dataclasses.asdict(stats), "seconds": phases.seconds}  # fmt: skip
    store = writer.commit(meta, tokenizers, valid_pairs, np.flatnonzero(valid), tables)
    phases.done("write")
    log.info("phases: %s", ", ".join(f"{k} {v:.1f} s" for k, v in phases.seconds.items()))
    return store


class Phases:
    """Wall time of each phase of a prepare, in order."""

    def __init__(self) -> None:
        self.start, self.seconds = time.perf_counter(), {}

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self.start, 2)
        self.start = now


def _all_pairs(sources: list[Source], config: Config) -> Iterator[Pair]:
    for source in sources:
        yield from iter_source(source, config.data)


def _valid_mask(n_pairs: int, config: Config, given: Given) -> np.ndarray:
    """The validation pairs among the kept ones: the run's recorded split, or a seeded one."""
    if given.valid is None:
        return split_mask(n_pairs, config.data.valid_size, config.train.seed)[1]
    if given.n_pairs != n_pairs:
        raise DataError(
            f"the run was split over {given.n_pairs:,} pairs but the corpus now has "
            f"{n_pairs:,}; the data changed since the run started (start a new --run)"
        )
    valid = np.zeros(n_pairs, dtype=bool)
    valid[given.valid] = True
    return valid


# --------------------------------------------------------------------------- read + clean


# --------------------------------------------------------------------------- tokenizers


def train_tokenizers(
    corpus: CleanCorpus, train: np.ndarray, config: Config
) -> tuple[Tokenizer, Tokenizer]:
    """The source and target tokenizers, trained on the training pairs (a seeded sample of at
    most `tokenizer.train_sample`); with `shared`, one tokenizer for both sides."""
    cfg = config.tokenizer
    chosen = _sample(train, cfg.train_sample, config.train.seed)
    pairs = corpus.subset(chosen, presented=True)  # the text the model will see
    n = int(chosen.sum())
    if cfg.shared:
        both = _train_one((text for pair in pairs for text in pair), cfg, "tokenizer", 2 * n)
        return both, both
    return tuple(  # type: ignore[return-value]
        _train_one((pair[side] for pair in pairs), cfg, f"tokenizer ({name})", n)
        for side, name in enumerate((config.data.lang_src, config.data.lang_tgt))
    )


def _sample(train: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """`train` itself, or a seeded sample of `size` of its pairs."""
    n = int(train.sum())
    if size is None or n <= size:
        return train
    chosen = np.zeros(len(train), dtype=bool)
    positions = np.flatnonzero(train)
    chosen[np.random.default_rng([seed, 1]).choice(positions, size, replace=False)] = True
    return chosen


def _train_one(texts: Iterator[str], cfg: TokenizerConfig, phase: str, total: int) -> Tokenizer:
    feed = _Feed(texts, bar(phase, "sentences", total))
    tokenizer = train_tokenizer(feed, cfg.min_freq, cfg.size, cfg.kind)
    feed.bar.close()
    if feed.interrupted:  # the library ends training quietly when its input raises
        raise KeyboardInterrupt
    return tokenizer


class _Feed:
    """Texts for the tokenizer trainer, counted; remembers a Ctrl-C that the trainer swallows."""

    def __init__(self, texts: Iterator[str], bar: tqdm) -> None:
        self.texts, self.bar, self.interrupted = texts, bar, False

    def __iter__(self) -> Iterator[str]:
        try:
            for n, text in enumerate(self.texts, start=1):
                if n % 10_000 == 0:
                    self.bar.update(10_000)
                yield text
        except KeyboardInterrupt:
            self.interrupted = True
            raise


# --------------------------------------------------------------------------- encode


def _encode(
    corpus: CleanCorpus,
    valid: np.ndarray,
    tokenizers: tuple[Tokenizer, Tokenizer],
    config: Config,
    writer: StoreWriter,
    stats: FilterStats,
    phases: Phases,
) -> list[Pair]:
    """Encode the kept pairs into the store (training pairs, then name-swapped and joined
    extras); return the validation pairs' text."""
    max_len = config.data.max_len
    if config.data.normalize == "nfc":
        tokenizers = for_clean_text(*tokenizers)
    # With several entries in data.source, each training pair records its entry (for weights).
    of_kept = corpus.source_of_kept() if len(corpus.lines_per_source) > 1 else None
    append_train = TrainWriter(writer, tokenizers, config.tokenizer, max_len)
    progress = bar("encode", "pairs", len(valid))
    valid_pairs: list[Pair] = []
    is_valid = iter(valid.tolist())
    start = 0
    for chunk, src, tgt, keep in encode_ahead(
        chunks(corpus.presented(), CHUNK), *tokenizers, max_len
    ):
        flags = list(islice(is_valid, len(chunk)))
        train_keep = [i for i in keep if not flags[i]]
        valid_keep = [i for i in keep if flags[i]]
        entry = None if of_kept is None else of_kept[start : start + len(chunk)][train_keep]
        append_train(chunk, src, tgt, train_keep, entry)
        writer.append("valid", [src[i] for i in valid_keep], [tgt[i] for i in valid_keep])
        stats.too_long += len(chunk) - len(keep)
        valid_pairs += [chunk[i] for i in valid_keep]
        progress.update(len(chunk))
        start += len(chunk)
    progress.close()
    phases.done("encode")
    # Extra pairs are made within each entry of data.source (one pass with a single entry).
    entries = [None] if of_kept is None else range(len(corpus.lines_per_source))
    copies = config.data.swap_names
    if copies:
        # Names are found in the tokenizers' sample: all training pairs up to its size, and a
        # seeded share of a larger corpus (where a name seen once more changes little).
        sample = _sample(~valid, config.tokenizer.train_sample, config.train.seed)
        names_from = corpus.subset(sample) if sample.sum() < (~valid).sum() else None
        if names_from is None and of_kept is not None:
            names_from = corpus.subset(~valid)  # the names of every entry, not each its own
        for k in entries:
            mask, seed = _of_entry(~valid, of_kept, k, config.train.seed)
            swapped = iter_swapped(corpus.subset(mask), copies, seed, names_from)
            swapped = _typed(swapped, config, f"{seed} swapped", stats)
            for chunk, src, tgt, keep in encode_ahead(chunks(swapped, CHUNK), *tokenizers, max_len):
                append_train(chunk, src, tgt, keep, _same_entry(k, len(keep)))
                stats.name_swapped += len(keep)
        phases.done("name swapping + encode")
    if config.data.join_pairs:
        for k in entries:
            mask, seed = _of_entry(~valid, of_kept, k, config.train.seed)
            joined = iter_joined(corpus.subset(mask), config.data.join_pairs, seed)
            joined = _typed(joined, config, f"{seed} joined", stats)
            for chunk, src, tgt, keep in encode_ahead(chunks(joined, CHUNK), *tokenizers, max_len):
                append_train(chunk, src, tgt, keep, _same_entry(k, len(keep)))
                stats.joined += len(keep)
        phases.done("joined pairs + encode")
    return valid_pairs


def _typed(pairs: Iterator[Pair], config: Config, seed: str, stats: FilterStats) -> Iterator[Pair]:
    """Extra pairs in the forms of `data.noise`, counted in the data line (as written without)."""
    cfg = config.data
    if not cfg.noise:
        return pairs
    return present_drawn(pairs, cfg.noise, seed, cfg.typo_words, stats.forms)


def _of_entry(
    train: np.ndarray, of_kept: np.ndarray | None, entry: int | None, seed: int
) -> tuple[np.ndarray, int]:
    """The training pairs of one entry of data.source (all of them for `None`), and the seed
    its extra pairs are drawn with."""
    if entry is None or of_kept is None:
        return train, seed
    return train & (of_kept == entry), seed + entry


def _same_entry(entry: int | None, n: int) -> np.ndarray | None:
    return None if entry is None else np.full(n, entry, dtype=SOURCE_DTYPE)
