"""Cleaning: normalise, drop empty and duplicate pairs (counted), and the seeded split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from translator.config import DataConfig
from translator.data.normalize import accent_lexicon, nfc, restore_accents
from translator.data.read import Pair


@dataclass
class FilterStats:
    """How many pairs each filter removed."""

    read: int = 0
    normalized: int = 0
    empty: int = 0
    duplicate: int = 0
    too_long: int = 0
    name_swapped: int = 0

    def summary(self) -> str:
        swapped = f"; {self.name_swapped:,} name-swapped pairs added" if self.name_swapped else ""
        return (
            f"{self.read:,} pairs read; dropped {self.empty:,} with an empty side, "
            f"{self.duplicate:,} duplicates, {self.too_long:,} too long; "
            f"{self.normalized:,} changed by normalisation{swapped}"
        )


def clean_pairs(
    pairs: Sequence[Pair], stats: FilterStats, cfg: DataConfig | None = None
) -> list[Pair]:
    """Normalise (whitespace, `data.normalize`, `data.restore_accents`); drop pairs with an empty
    side and (with `data.dedup`) exact duplicates."""
    cfg = cfg or DataConfig()
    stats.read = len(pairs)
    normalized = normalize_pairs(pairs, cfg)
    stats.normalized = sum(a != b for a, b in zip(pairs, normalized, strict=True))
    seen: set[Pair] = set()
    out = []
    for src, tgt in normalized:
        pair = (" ".join(src.split()), " ".join(tgt.split()))
        if not pair[0] or not pair[1]:
            stats.empty += 1
        elif cfg.dedup and pair in seen:
            stats.duplicate += 1
        else:
            seen.add(pair)
            out.append(pair)
    return out


def normalize_pairs(pairs: Sequence[Pair], cfg: DataConfig) -> list[Pair]:
    """Both sides in Unicode NFC (`data.normalize`), and the Italian side's apostrophe-written
    accents restored (`data.restore_accents`), with a lexicon of accented words from the corpus."""
    out = [(nfc(s), nfc(t)) for s, t in pairs] if cfg.normalize == "nfc" else list(pairs)
    if cfg.restore_accents:
        for side, lang in enumerate((cfg.lang_src, cfg.lang_tgt)):
            if lang != "it":
                continue
            lexicon = accent_lexicon(pair[side] for pair in out)
            for n, pair in enumerate(out):
                fixed = restore_accents(pair[side], lexicon)
                if fixed != pair[side]:
                    out[n] = (fixed, pair[1]) if side == 0 else (pair[0], fixed)
    return out


def split_indices(n: int, valid_size: int, seed: int) -> tuple[list[int], list[int]]:
    """A seeded train/validation split of range(n); validation keeps at most half the data."""
    valid_size = min(valid_size, n // 2)
    order = np.random.default_rng(seed).permutation(n)
    return sorted(order[valid_size:].tolist()), sorted(order[:valid_size].tolist())


# --------------------------------------------------------------------------- dataset, batches
