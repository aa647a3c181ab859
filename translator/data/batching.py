"""Batches: the encoded dataset, token-budget bucketing, padding, and sharding across ranks."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import torch

from translator.errors import DataError
from translator.specials import EOS_ID, PAD_ID, SOS_ID


class Sequences:
    """Token sequences stored flat: `ids` (1-D) and `offsets` (n + 1), in memory or memory-mapped
    from a prepared store. Sequence i is ids[offsets[i]:offsets[i + 1]]."""

    def __init__(
        self, ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray | None = None
    ) -> None:
        assert offsets.ndim == 1 and len(offsets) >= 1
        self.ids, self.offsets = ids, offsets
        self._lengths = lengths

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]]) -> Sequences:
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = np.fromiter((i for s in seqs for i in s), dtype=np.int32, count=int(offsets[-1]))
        return cls(ids, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, i: int) -> list[int]: ...
    @overload
    def __getitem__(self, i: slice) -> list[list[int]]: ...
    def __getitem__(self, i: int | slice) -> list[int] | list[list[int]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self.ids[self.offsets[i] : self.offsets[i + 1]].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequences | list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def lengths(self) -> np.ndarray:
        """Each sequence's length (the store's uint16 array when it has one)."""
        return self._lengths if self._lengths is not None else np.diff(self.offsets)


class BilingualDataset:
    """Encoded pairs; item i: encoder input [SOS] src [EOS], decoder input [SOS] tgt, label
    tgt [EOS]. The ids are lists, or flat arrays (`Sequences`) mapped from a prepared store.

    `copies`, when given, says which of several encodings of its text each pair is (BPE-dropout
    writes each training pair several times, an epoch takes one copy of each)."""

    def __init__(
        self,
        src_ids: Sequences | Sequence[Sequence[int]],
        tgt_ids: Sequences | Sequence[Sequence[int]],
        copies: np.ndarray | None = None,
    ) -> None:
        assert len(src_ids) == len(tgt_ids)
        assert copies is None or len(copies) == len(src_ids)
        self.copies = copies
        self.src_ids = src_ids if isinstance(src_ids, Sequences) else Sequences.from_lists(src_ids)
        self.tgt_ids = tgt_ids if isinstance(tgt_ids, Sequences) else Sequences.from_lists(tgt_ids)

    def __len__(self) -> int:
        return len(self.src_ids)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        src, tgt = self.src_ids[i], self.tgt_ids[i]
        return {
            "encoder_input": [SOS_ID, *src, EOS_ID],
            "decoder_input": [SOS_ID, *tgt],
            "label": [*tgt, EOS_ID],
        }

    def src_lengths(self) -> np.ndarray:
        """Encoder input lengths (specials included)."""
        return self.src_ids.lengths() + 2

    def tgt_lengths(self) -> np.ndarray:
        """Decoder input lengths (specials included)."""
        return self.tgt_ids.lengths() + 1


@dataclass
class Batch:
    """A padded batch. src: (B, S); tgt_in, tgt_out: (B, T)."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    n_src_tokens: int
    n_tgt_tokens: int

    def to(self, device: torch.device) -> Batch:
        return Batch(
            self.src.to(device, non_blocking=True),
            self.tgt_in.to(device, non_blocking=True),
            self.tgt_out.to(device, non_blocking=True),
            self.n_src_tokens,
            self.n_tgt_tokens,
        )

    @property
    def padded_tokens(self) -> int:
        return self.src.numel() + self.tgt_out.numel()


def collate(
    items: Sequence[dict[str, list[int]]], src_pad_id: int = PAD_ID, tgt_pad_id: int = PAD_ID
) -> Batch:
    """Pad a list of dataset items to the batch's own longest sequence."""
    src = _pad([it["encoder_input"] for it in items], src_pad_id)
    tgt_in = _pad([it["decoder_input"] for it in items], tgt_pad_id)
    tgt_out = _pad([it["label"] for it in items], tgt_pad_id)
    n_src = sum(len(it["encoder_input"]) for it in items)
    n_tgt = sum(len(it["label"]) for it in items)
    return Batch(src, tgt_in, tgt_out, n_src, n_tgt)


def _pad(seqs: Sequence[list[int]], pad_id: int) -> torch.Tensor:
    out = np.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=np.int64)
    for row, seq in enumerate(seqs):
        out[row, : len(seq)] = seq
    return torch.from_numpy(out)


BYTES_PER_EXAMPLE = 48
"""Memory an epoch's order takes per example while it is made (its indices, their shuffle, the
sort by length, the batch bounds), measured from TokenBatchSampler.batches."""


def check_epoch_size(counts: Sequence[int], weights: Sequence[float], names: Sequence[str]) -> None:
    """Refuse, in one line, weights that make an epoch too large to put in order in this
    machine's memory: `counts` are the examples of each entry of data.source, `names` its names."""
    sizes = [weighted_count(n, w) for n, w in zip(counts, weights, strict=True)]
    limit = memory_bytes() // 2 // BYTES_PER_EXAMPLE
    if sum(sizes) <= limit:
        return
    k = max(range(len(sizes)), key=lambda i: sizes[i])
    name = names[k] if k < len(names) else f"entry {k + 1}"
    room = max(limit - (sum(sizes) - sizes[k]), 0)
    most = f"at most {room / counts[k]:,.3g}" if counts[k] and room else "a smaller one"
    raise DataError(
        f"data.source: {name} with weight {weights[k]:,g} makes an epoch of {sum(sizes):,} "
        f"examples ({counts[k]:,} x {weights[k]:,g}), about "
        f"{sum(sizes) * BYTES_PER_EXAMPLE / 2**30:,.0f} GiB to put in order, more than half of "
        f"this machine's {memory_bytes() / 2**30:,.0f} GiB; give it {most} as its weight"
    )


def memory_bytes() -> int:
    """This machine's memory (64 GiB where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 64 * 2**30


def weighted_count(n: int, weight: float) -> int:
    """Examples an epoch takes of an entry of `n` under `weight`: floor(w) times each, and a
    share w - floor(w) of them once more."""
    return int(weight) * n + round((weight - int(weight)) * n)


class TokenBatchSampler:
    """Groups examples of similar length into batches of at most `batch_tokens` padded tokens.

    Each epoch's batches are a pure function of (seed, epoch): a resumed run replays them exactly.
    With `copies` (the copy number of each example, 0..K-1), epoch e uses the examples of copy
    e mod K only. With `weights` (one per entry of data.source; `entries` gives each example's
    entry, all 0 when None), an epoch takes each entry's examples `floor(w)` times and a seeded
    share `w - floor(w)` of them once more, drawn afresh each epoch.
    """

    def __init__(
        self,
        src_lengths: np.ndarray,
        tgt_lengths: np.ndarray,
        batch_tokens: int,
        seed: int,
        shuffle: bool = True,
        copies: np.ndarray | None = None,
        entries: np.ndarray | None = None,
        weights: Sequence[float] | None = None,
    ) -> None:
        self.src_lengths = src_lengths
        self.tgt_lengths = tgt_lengths
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.shuffle = shuffle
        self.copies = copies
        self.n_copies = int(copies.max()) + 1 if copies is not None and len(copies) else 1
        self.entries = entries
        self.weights = None if weights is None or all(w == 1 for w in weights) else list(weights)

    def epoch_examples(self, epoch: int) -> np.ndarray:
        """The examples `epoch` trains on, in index order (an example may come several times)."""
        if self.copies is None:
            base = np.arange(len(self.src_lengths))
        else:
            base = np.flatnonzero(self.copies == epoch % self.n_copies)
        if self.weights is None:
            return base
        of = self.entries[base] if self.entries is not None else np.zeros(len(base), np.uint8)
        parts = []
        for k, weight in enumerate(self.weights):
            members = base[of == k]
            whole = int(weight)
            parts += [members] * whole
            extra = weighted_count(len(members), weight) - whole * len(members)
            if extra > 0:
                draw = np.random.default_rng([self.seed, epoch, 3, k])
                taken = draw.choice(len(members), extra, replace=False)
                parts.append(members[np.sort(taken)])
        return np.sort(np.concatenate(parts), kind="stable") if parts else base[:0]

    def batches(self, epoch: int) -> list[np.ndarray]:
        """The index batches for `epoch`: int32 arrays, views of one array of the epoch's order
        (a few bytes per example, however large the corpus)."""
        rng = np.random.default_rng([self.seed, epoch])
        if self.copies is None and self.weights is None:
            n = len(self.src_lengths)
            order = rng.permutation(n) if self.shuffle else np.arange(n)
        else:
            order = self.epoch_examples(epoch)
            n = len(order)
            order = order[rng.permutation(n)] if self.shuffle else order
        # stable sort by target length, then source length: ties keep the random order
        order = order[np.lexsort((self.src_lengths[order], self.tgt_lengths[order]))]
        order = order.astype(np.int32, copy=False) if len(self.src_lengths) < 2**31 else order
        longest_of = np.maximum(self.src_lengths[order], self.tgt_lengths[order])
        bounds, start, longest = [], 0, 0
        for base in range(0, n, 1 << 20):  # as Python ints a million at a time: a few MB
            piece = longest_of[base : base + (1 << 20)].tolist()
            for k, length in enumerate(piece, start=base):
                if k > start and (k - start + 1) * max(longest, length) > self.batch_tokens:
                    bounds.append(k)
                    start, longest = k, 0
                longest = max(longest, length)
        del longest_of
        batches = np.split(order, bounds) if n else []
        if self.shuffle:
            batches = [batches[j] for j in rng.permutation(len(batches))]
        return batches


def shard_batches(batches: list[list[int]], rank: int, world_size: int) -> list[list[int]]:
    """This rank's share of an epoch's batches: every rank gets the same number, every example
    lands on exactly one rank. Rank r takes batches r, r + W, r + 2W, ... of `split_evenly`."""
    return split_evenly(batches, world_size)[rank::world_size]


def split_evenly(batches: list[list[int]], world_size: int) -> list[list[int]]:
    """Batches split in two (largest first) until they divide evenly among `world_size` ranks.

    Splitting keeps the order of the examples: the batches, laid end to end, hold the same
    sequence for every world size.
    """
    batches = list(batches)
    while len(batches) % world_size:
        largest = max(range(len(batches)), key=lambda j: len(batches[j]))
        if len(batches[largest]) < 2:
            raise ValueError(f"too few examples to give each of {world_size} ranks a batch")
        big = batches.pop(largest)
        half = len(big) // 2
        batches[largest:largest] = [big[:half], big[half:]]
    return batches


def drop_examples(batches: list[list[int]], n: int) -> list[list[int]]:
    """The batches without the first `n` examples of their sequence (a batch may be cut)."""
    out, seen = [], 0
    for batch in batches:
        if seen + len(batch) > n:
            out.append(batch[max(0, n - seen) :])
        seen += len(batch)
    return out


def examples_consumed(
    batches: list[list[int]], offset: int, batch_in_epoch: int, world_size: int
) -> int:
    """Examples of an epoch used once every one of `world_size` ranks took `batch_in_epoch` of
    its batches, the epoch's first `offset` examples having been used before."""
    remaining = split_evenly(drop_examples(batches, offset), world_size)
    return offset + sum(len(b) for b in remaining[: batch_in_epoch * world_size])
