"""Decoding: batched greedy search over a key/value cache (shared by training samples and
translate)."""

from __future__ import annotations

import torch

from translator.model import Transformer, reorder_cache
from translator.tokenizer import EOS_ID, PAD_ID, SOS_ID


def max_output_lengths(
    src: torch.Tensor, max_len_a: float, max_len_b: int, max_positions: int
) -> torch.Tensor:
    """Per sentence output budget a * source_length + b, within the model's position table."""
    src_len = (src != PAD_ID).sum(dim=1) - 2  # without [SOS]/[EOS]
    limit = (max_len_a * src_len.float() + max_len_b).long()
    return limit.clamp(min=1, max=max_positions - 1)


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    use_cache: bool = True,
) -> list[list[int]]:
    """Greedy outputs (ids, without [SOS]/[EOS]) for a (B, S) source batch.

    Each sentence stops at its own [EOS] or its length budget; finished sentences leave the batch.
    `use_cache=False` recomputes the whole prefix at every step (the slow reference).
    """
    was_training = model.training
    model.eval()
    B = src.size(0)
    limits = max_output_lengths(src, max_len_a, max_len_b, model.cfg.max_positions)
    memory, src_mask = model.encode(src)
    cache = model.new_cache() if use_cache else None
    prefix = torch.full((B, 1), SOS_ID, dtype=torch.long, device=src.device)  # (b, t) alive rows
    alive = torch.arange(B, device=src.device)  # original row of each alive row
    outputs: list[list[int]] = [[] for _ in range(B)]
    for step in range(int(limits.max())):
        step_input = prefix[:, -1:] if use_cache else prefix
        hidden = model.decode(step_input, memory, src_mask, cache)[:, -1]  # (b, D)
        next_ids = model.project(hidden).argmax(dim=-1)  # (b,)
        for row, token in zip(alive.tolist(), next_ids.tolist(), strict=True):
            if token != EOS_ID:
                outputs[row].append(token)
        done = (next_ids == EOS_ID) | (limits[alive] <= step + 1)
        if bool(done.all()):
            break
        if bool(done.any()):
            keep = (~done).nonzero().squeeze(1)
            alive, memory, src_mask = alive[keep], memory[keep], src_mask[keep]
            next_ids, prefix = next_ids[keep], prefix[keep]
            if cache is not None:
                cache = reorder_cache(cache, keep)
        prefix = torch.cat([prefix, next_ids[:, None]], dim=1)
    model.train(was_training)
    return outputs
