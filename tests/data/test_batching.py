"""Batching (data/batching.py): items, collate, and token batches that keep the budget; the
weights of data.source's entries: each epoch gives each entry the count its weight promises,
fractions are drawn afresh each epoch from the seed, and the batches stay a pure function of
(seed, epoch), so a resume replays them; with BPE-dropout's copies, an epoch takes one copy of
each pair."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from translator.data.batching import BilingualDataset, TokenBatchSampler, collate
from translator.specials import EOS_ID, PAD_ID, SOS_ID


def varied_dataset(n: int = 2000, seed: int = 0) -> BilingualDataset:
    """Sources of 1-60 tokens; targets within 3 tokens of their source."""
    rng = np.random.default_rng(seed)
    src_len = rng.integers(1, 61, n)
    tgt_len = np.maximum(1, src_len + rng.integers(-3, 4, n))
    return BilingualDataset(
        [list(range(4, 4 + s)) for s in src_len], [list(range(4, 4 + t)) for t in tgt_len]
    )


class ListSampler(TokenBatchSampler):
    """The sampler with its batches as lists, to compare with ==."""

    def batches(self, epoch: int) -> list[list[int]]:  # type: ignore[override]
        return [b.tolist() for b in super().batches(epoch)]


def sampler_for(ds: BilingualDataset, batch_tokens: int, seed: int = 0, shuffle: bool = True):
    return ListSampler(ds.src_lengths(), ds.tgt_lengths(), batch_tokens, seed, shuffle)


def test_dataset_item_layout() -> None:
    ds = BilingualDataset([[10, 11, 12], [20]], [[30, 31], [40, 41, 42, 43]])
    assert len(ds) == 2
    for i in range(len(ds)):
        item = ds[i]
        assert item["encoder_input"] == [SOS_ID, *ds.src_ids[i], EOS_ID]
        assert item["decoder_input"] == [SOS_ID, *ds.tgt_ids[i]]
        assert item["label"] == [*ds.tgt_ids[i], EOS_ID]
        assert item["decoder_input"][1:] == item["label"][:-1]
        assert len(item["decoder_input"]) == len(item["label"])
    assert ds.src_lengths().tolist() == [5, 3]
    assert ds.tgt_lengths().tolist() == [3, 5]


def test_collate_pads_to_the_batch_longest_and_counts_real_tokens() -> None:
    ds = BilingualDataset([[10, 11, 12], [20], [21, 22]], [[30], [40, 41, 42, 43], [44, 45]])
    batch = collate([ds[0], ds[2]])
    assert batch.src.tolist() == [[SOS_ID, 10, 11, 12, EOS_ID], [SOS_ID, 21, 22, EOS_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[SOS_ID, 30, PAD_ID], [SOS_ID, 44, 45]]
    assert batch.tgt_out.tolist() == [[30, EOS_ID, PAD_ID], [44, 45, EOS_ID]]
    assert batch.n_src_tokens == int((batch.src != PAD_ID).sum()) == 9
    assert batch.n_tgt_tokens == int((batch.tgt_out != PAD_ID).sum()) == 5
    assert batch.padded_tokens == batch.src.numel() + batch.tgt_out.numel()
    # Teacher forcing: every real label has a real decoder input at the same position.
    assert torch.equal(batch.tgt_in != PAD_ID, batch.tgt_out != PAD_ID)


@pytest.mark.parametrize("batch_tokens", [64, 300, 1024])
@pytest.mark.parametrize("shuffle", [True, False])
def test_token_batches_respect_the_budget_and_cover_each_index_once(
    batch_tokens: int, shuffle: bool
) -> None:
    ds = varied_dataset(800)
    src, tgt = ds.src_lengths(), ds.tgt_lengths()
    batches = sampler_for(ds, batch_tokens, shuffle=shuffle).batches(epoch=0)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(ds)))
    for b in batches:
        assert b
        longest = max(int(src[b].max()), int(tgt[b].max()))
        assert len(b) * longest <= batch_tokens or len(b) == 1
        # The collated batch is exactly that shape: the budget holds for real tensors.
        batch = collate([ds[i] for i in b])
        assert batch.src.numel() <= max(batch_tokens, batch.src.size(1))
        assert batch.tgt_out.numel() <= max(batch_tokens, batch.tgt_out.size(1))


def test_an_over_long_example_gets_a_batch_of_its_own() -> None:
    ds = BilingualDataset([[5] * 3, [5] * 50, [5] * 4, [5] * 2], [[6] * 3, [6] * 2, [6] * 4, [6]])
    batches = sampler_for(ds, batch_tokens=20).batches(0)
    assert [1] in batches
    assert sorted(i for b in batches for i in b) == [0, 1, 2, 3]


def test_token_batches_are_a_function_of_seed_and_epoch() -> None:
    ds = varied_dataset(500)
    sampler = sampler_for(ds, 400, seed=7)
    first = sampler.batches(epoch=3)
    assert sampler_for(ds, 400, seed=7).batches(epoch=3) == first
    assert sampler.batches(epoch=4) != first
    assert sampler_for(ds, 400, seed=8).batches(epoch=3) != first
    # Another epoch is another order, and yet covers the same examples.
    assert sorted(i for b in sampler.batches(epoch=4) for i in b) == list(range(len(ds)))


def test_batch_order_is_shuffled_not_sorted_by_length() -> None:
    ds = varied_dataset(500)
    tgt = ds.tgt_lengths()

    def longest_target_per_batch(shuffle: bool) -> list[int]:
        return [int(tgt[b].max()) for b in sampler_for(ds, 400, shuffle=shuffle).batches(0)]

    unshuffled, shuffled = longest_target_per_batch(False), longest_target_per_batch(True)
    assert unshuffled == sorted(unshuffled)  # batches are built in order of target length
    assert shuffled != sorted(shuffled)  # ... but served in a random order


def test_token_batches_waste_little_padding() -> None:
    ds = varied_dataset(2000)
    real = padded = 0
    for b in sampler_for(ds, 1024).batches(0):
        batch = collate([ds[i] for i in b])
        real += batch.n_src_tokens + batch.n_tgt_tokens
        padded += batch.padded_tokens
    assert 1 - real / padded < 0.15


# --------------------------------------------------------------------------- weighted sources


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


def test_an_epoch_takes_one_copy_of_each_pair() -> None:
    copies = np.array([0, 1, 2] * 40, dtype=np.uint8)
    lengths = np.random.default_rng(0).integers(3, 20, len(copies))
    sampler = TokenBatchSampler(lengths, lengths, 64, seed=1, copies=copies)
    for epoch in range(5):
        used = np.concatenate(sampler.batches(epoch))
        assert sorted(used.tolist()) == np.flatnonzero(copies == epoch % 3).tolist()
    assert [b.tolist() for b in sampler.batches(4)] == [b.tolist() for b in sampler.batches(4)]
