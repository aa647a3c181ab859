"""Weights of data.source's entries: each epoch gives each entry the count its weight promises,
fractions are drawn afresh each epoch from the seed, and the batches stay a pure function of
(seed, epoch), so a resume replays them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from translator.data.batching import TokenBatchSampler

WEIGHTS = st.sampled_from([0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0])


def sampler(entries: np.ndarray, weights: list[float], seed: int = 5) -> TokenBatchSampler:
    lengths = np.random.default_rng(0).integers(1, 20, len(entries))
    return TokenBatchSampler(lengths, lengths, 200, seed, entries=entries, weights=weights)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 60), min_size=1, max_size=4),
    weights=st.lists(WEIGHTS, min_size=4, max_size=4),
    epoch=st.integers(0, 5),
)
def test_each_entry_gives_the_count_its_weight_promises(
    sizes: list[int], weights: list[float], epoch: int
) -> None:
    entries = np.repeat(np.arange(len(sizes), dtype=np.uint8), sizes)
    np.random.default_rng(1).shuffle(entries)
    s = sampler(entries, weights[: len(sizes)])
    batches = s.batches(epoch)
    taken = np.concatenate(batches) if batches else np.zeros(0, np.int64)
    assert sorted(taken.tolist()) == s.epoch_examples(epoch).tolist()  # batches hold the epoch
    for k, (n, w) in enumerate(zip(sizes, weights, strict=False)):
        of_k = taken[entries[taken] == k]
        assert len(of_k) == int(w) * n + round((w - int(w)) * n)
        counts = np.bincount(of_k, minlength=len(entries))[entries == k]
        assert counts.max(initial=0) <= int(w) + 1  # a pair at most once more than floor(w)
        assert counts.min(initial=int(w)) >= int(w)  # every pair at least floor(w) times


def test_fractions_are_drawn_afresh_each_epoch_and_replayed_for_the_same_seed() -> None:
    entries = np.array([0] * 200 + [1] * 200, dtype=np.uint8)
    s = sampler(entries, [1.0, 0.25])
    share = [set(s.epoch_examples(e)[s.epoch_examples(e) >= 200].tolist()) for e in range(3)]
    assert all(len(x) == 50 for x in share)
    assert share[0] != share[1] and share[1] != share[2]
    again = sampler(entries, [1.0, 0.25])
    for epoch in range(3):
        mine, theirs = s.batches(epoch), again.batches(epoch)
        assert all(np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True))
    other_seed = sampler(entries, [1.0, 0.25], seed=6)
    assert set(other_seed.epoch_examples(0).tolist()) != set(s.epoch_examples(0).tolist())


def test_all_weights_one_is_the_unweighted_order() -> None:
    entries = np.array([0, 1] * 50, dtype=np.uint8)
    weighted, plain = sampler(entries, [1.0, 1.0]), sampler(entries, None)  # type: ignore[arg-type]
    for a, b in zip(weighted.batches(2), plain.batches(2), strict=True):
        assert np.array_equal(a, b)
