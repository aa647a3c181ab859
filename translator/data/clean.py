"""Cleaning: normalise, drop empty pairs, find duplicates by hash (counted), and the seeded split.

`clean_chunk` is the unit of work: a chunk of pairs in, the cleaned pairs and a 64-bit hash of
each out. `prepare` runs it in a pool of processes over a stream of chunks and deduplicates the
hashes with numpy, so memory grows by bytes per pair, not by the text; `clean_pairs` does the
same on a list, for small corpora and tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from translator.config import DataConfig
from translator.data.normalize import accent_lexicon, nfc, restore_accents
from translator.data.read import Pair
from translator.data.subtitles import clean_subtitle_pair


@dataclass
class FilterStats:
    """How many pairs each filter removed."""

    read: int = 0
    normalized: int = 0
    empty: int = 0
    duplicate: int = 0
    too_long: int = 0
    subtitle_changed: int = 0
    subtitle_dropped: int = 0
    name_swapped: int = 0
    joined: int = 0
    forms: dict[str, int] = field(default_factory=dict)
    """Training pairs shown in each form of `data.noise`."""
    per_source: list[tuple[str, int]] = field(default_factory=list)
    """Pairs read from each entry of data.source, when there are several."""

    def count(self, chunk: CleanedChunk) -> int:
        """Add a cleaned chunk's counts; the number of pairs it was made from."""
        read = len(chunk.pairs) + chunk.empty + chunk.subtitle_dropped
        self.read += read
        self.normalized += chunk.normalized
        self.empty += chunk.empty
        self.subtitle_changed += chunk.subtitle_changed
        self.subtitle_dropped += chunk.subtitle_dropped
        return read

    def summary(self) -> str:
        added = f"; {self.name_swapped:,} name-swapped pairs added" if self.name_swapped else ""
        if self.joined:
            added += f"; {self.joined:,} joined pairs added"
        subtitles = ""
        if self.subtitle_changed or self.subtitle_dropped:
            subtitles = (f"; subtitle marks taken out of {self.subtitle_changed:,} pairs, "
                         f"{self.subtitle_dropped:,} misaligned pairs dropped")  # fmt: skip
        if any(self.forms.values()):
            added += "; shown as typed: " + ", ".join(
                f"{n:,} {FORM_NAMES[name]}" for name, n in self.forms.items()
            )
        each = ""
        if len(self.per_source) > 1:
            each = " (" + ", ".join(f"{name} {n:,}" for name, n in self.per_source) + ")"
        return (
            f"{self.read:,} pairs read{each}; dropped {self.empty:,} with an empty side, "
            f"{self.duplicate:,} duplicates, {self.too_long:,} too long; "
            f"{self.normalized:,} changed by normalisation{subtitles}{added}"
        )


FORM_NAMES = {
    "upper": "in capitals",
    "lower": "lower case without final punctuation",
    "title": "in title case",
    "typos": "with typos",
}


@dataclass
class CleanedChunk:
    """The non-empty pairs of a chunk, cleaned, with their hashes and the chunk's counts."""

    pairs: list[Pair]
    hashes: np.ndarray
    """uint64, one per pair of `pairs`: equal pairs have equal hashes."""
    normalized: int
    empty: int
    subtitle_changed: int = 0
    subtitle_dropped: int = 0


@dataclass(frozen=True)
class Cleaner:
    """What cleaning needs to know: the normalisation, and the accent lexicon when used."""

    normalize: str = "nfc"
    lexicon_side: int | None = None
    """The side whose accents are restored (the Italian one), or None."""
    lexicon: dict[str, int] | None = None
    subtitles: bool = False
    """`data.subtitles`: take subtitle marks out, drop misaligned pairs."""


def make_cleaner(cfg: DataConfig, pairs: Iterable[Pair] = ()) -> Cleaner:
    """The Cleaner for `cfg`; with `data.restore_accents`, its lexicon is counted from the Italian
    side of `pairs` (the whole corpus, read once more for it)."""
    side = italian_side(cfg)
    if not cfg.restore_accents or side is None:
        return Cleaner(cfg.normalize, subtitles=cfg.subtitles)
    texts = (nfc(p[side]) if cfg.normalize == "nfc" else p[side] for p in pairs)
    return Cleaner(cfg.normalize, side, accent_lexicon(texts), cfg.subtitles)


def italian_side(cfg: DataConfig) -> int | None:
    """0 or 1: the side in Italian, whose accents `data.restore_accents` restores; else None."""
    return next((i for i, lang in enumerate((cfg.lang_src, cfg.lang_tgt)) if lang == "it"), None)


def clean_chunk(pairs: Sequence[Pair], cleaner: Cleaner) -> CleanedChunk:
    """Normalise (`data.normalize`, `data.restore_accents`, single spaces) and drop pairs with an
    empty side; hash the rest."""
    out: list[Pair] = []
    digests = bytearray()
    normalized = empty = changed = dropped = 0
    for pair in pairs:
        src, tgt = normalize_pair(pair, cleaner)
        normalized += (src, tgt) != pair
        src, tgt = " ".join(src.split()), " ".join(tgt.split())
        if not src or not tgt:
            empty += 1
            continue
        if cleaner.subtitles:
            cleaned = clean_subtitle_pair((src, tgt))
            if cleaned is None:
                dropped += 1
                continue
            changed += cleaned != (src, tgt)
            src, tgt = cleaned
        out.append((src, tgt))
        key = f"{len(src)}:{src}{tgt}".encode("utf-8", "surrogatepass")
        digests += hashlib.blake2b(key, digest_size=8).digest()
    hashes = np.frombuffer(bytes(digests), dtype=np.uint64)
    return CleanedChunk(out, hashes, normalized, empty, changed, dropped)


def normalize_pair(pair: Pair, cleaner: Cleaner) -> Pair:
    """Both sides in Unicode NFC, and one side's apostrophe-written accents restored."""
    src, tgt = (nfc(pair[0]), nfc(pair[1])) if cleaner.normalize == "nfc" else pair
    if cleaner.lexicon_side == 0:
        src = restore_accents(src, cleaner.lexicon)
    elif cleaner.lexicon_side == 1:
        tgt = restore_accents(tgt, cleaner.lexicon)
    return src, tgt


def first_occurrences(hashes: np.ndarray) -> np.ndarray:
    """A mask of the pairs whose hash was not seen earlier: deduplication, in bytes per pair."""
    keep = np.zeros(len(hashes), dtype=bool)
    keep[np.unique(hashes, return_index=True)[1]] = True
    return keep


def clean_pairs(
    pairs: Sequence[Pair], stats: FilterStats, cfg: DataConfig | None = None
) -> list[Pair]:
    """Normalise (whitespace, `data.normalize`, `data.restore_accents`); drop pairs with an empty
    side and (with `data.dedup`) exact duplicates."""
    cfg = cfg or DataConfig()
    chunk = clean_chunk(pairs, make_cleaner(cfg, pairs))
    stats.count(chunk)
    keep = first_occurrences(chunk.hashes) if cfg.dedup else np.ones(len(chunk.pairs), bool)
    stats.duplicate = int((~keep).sum())
    return [pair for pair, kept in zip(chunk.pairs, keep.tolist(), strict=True) if kept]


def normalize_pairs(pairs: Sequence[Pair], cfg: DataConfig) -> list[Pair]:
    """Both sides in Unicode NFC (`data.normalize`), and the Italian side's apostrophe-written
    accents restored (`data.restore_accents`), with a lexicon of accented words from the corpus."""
    cleaner = make_cleaner(cfg, pairs)
    return [normalize_pair(pair, cleaner) for pair in pairs]


def split_indices(n: int, valid_size: int, seed: int) -> tuple[list[int], list[int]]:
    """A seeded train/validation split of range(n); validation keeps at most half the data."""
    train, valid = split_mask(n, valid_size, seed)
    return np.flatnonzero(train).tolist(), np.flatnonzero(valid).tolist()


def split_mask(n: int, valid_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The same split as boolean masks over range(n): a byte per pair, no lists of indices."""
    valid_size = min(valid_size, n // 2)
    valid = np.zeros(n, dtype=bool)
    valid[np.random.default_rng(seed).permutation(n)[:valid_size]] = True
    return ~valid, valid
