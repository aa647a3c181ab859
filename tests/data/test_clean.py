"""Cleaning (data/clean.py): empty and duplicate pairs counted, the seeded split."""

from __future__ import annotations

import pytest

from translator.config import DataConfig
from translator.data.clean import FilterStats, clean_pairs, split_indices


def test_clean_pairs_counts_empty_and_duplicates() -> None:
    pairs = [
        ("a  b", "c d"),
        ("a b", " c\td "),  # a duplicate once whitespace is normalised
        ("", "x"),
        ("y", "   "),
        ("e", "f"),
        ("a b", "c d"),
    ]
    stats = FilterStats()
    assert clean_pairs(pairs, stats) == [("a b", "c d"), ("e", "f")]
    assert (stats.read, stats.empty, stats.duplicate) == (6, 2, 2)
    assert "6 pairs read" in stats.summary()

    stats = FilterStats()
    kept = clean_pairs(pairs, stats, DataConfig(dedup=False))
    assert kept == [("a b", "c d"), ("a b", "c d"), ("e", "f"), ("a b", "c d")]
    assert (stats.empty, stats.duplicate) == (2, 0)


@pytest.mark.parametrize(("n", "valid_size"), [(100, 10), (7, 3), (10, 50), (1, 1)])
def test_split_indices_is_a_seeded_partition(n: int, valid_size: int) -> None:
    train, valid = split_indices(n, valid_size, seed=3)
    assert sorted(train + valid) == list(range(n))  # disjoint, and covers everything
    assert len(valid) == min(valid_size, n // 2)
    assert split_indices(n, valid_size, seed=3) == (train, valid)


def test_split_indices_depends_on_the_seed() -> None:
    assert split_indices(1000, 100, seed=1)[1] != split_indices(1000, 100, seed=2)[1]
