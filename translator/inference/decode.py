"""Decoding: batched greedy and beam search over a key/value cache (shared by training samples,
validate and translate)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from translator.config import DecodeConfig
from translator.inference.mbr import mbr_choice
from translator.inference.text import guard_size, run_limit
from translator.model.transformer import Transformer, reorder_cache
from translator.specials import EOS_ID, PAD_ID, SOS_ID, UNK_ID


def max_output_lengths(
    src: torch.Tensor, max_len_a: float, max_len_b: int, max_positions: int
) -> torch.Tensor:
    """Per sentence output budget a * source_length + b, within the model's position table."""
    src_len = (src != PAD_ID).sum(dim=1) - 2  # without [SOS]/[EOS]
    limit = (max_len_a * src_len.float() + max_len_b).long()
    return limit.clamp(min=1, max=max_positions - 1)


def guard_sizes(src: torch.Tensor, n: int) -> torch.Tensor:
    """(B,) the repeat guard of each source of a (B, S) batch (`guard_size`; 0: off)."""
    sizes = [guard_size(row, n) for row in _real_tokens(src)] if n >= 2 else [0] * src.size(0)
    return torch.tensor(sizes, dtype=torch.long, device=src.device)


def run_limits(src: torch.Tensor, r: int) -> torch.Tensor:
    """(B,) the longest run of one token each output of a (B, S) batch may hold (`run_limit`)."""
    sizes = [run_limit(row, r) for row in _real_tokens(src)] if r >= 1 else [0] * src.size(0)
    return torch.tensor(sizes, dtype=torch.long, device=src.device)


def ban_specials_(logits: torch.Tensor) -> None:
    """Set, in place, the scores (R, V) of [PAD] and [SOS] to -inf: no output holds them. Before
    a log-softmax only [SOS] is taken out (an imported Marian model's [SOS] and [PAD] are one
    token of its own vocabulary, counted once there, as transformers' `generate` counts it);
    `ban_pad_` takes [PAD] out after it."""
    logits[:, SOS_ID] = -math.inf


def ban_pad_(scores: torch.Tensor) -> None:
    scores[:, PAD_ID] = -math.inf


def force_eos_(scores: torch.Tensor, rows: torch.Tensor) -> None:
    """Leave [EOS] the only choice, in place, in the rows (R,) marks of scores (R, V), at log-
    probability 0, as transformers' ForcedEOSTokenLogitsProcessor leaves it (a hypothesis cut by
    the budget is not charged for an [EOS] it did not choose)."""
    scores[rows] = -math.inf
    scores[rows, EOS_ID] = 0.0


def ban_runs_(scores: torch.Tensor, prefix: torch.Tensor, limits: torch.Tensor) -> None:
    """Set to -inf, in place, each row's score (R, V) for the token that would make the run its
    prefix (R, 1 + t; [SOS] first) ends with longer than the row's limit (R,; 0: off)."""
    generated = prefix[:, 1:]
    for limit in limits.unique().tolist():
        if limit < 1 or generated.size(1) < limit:
            continue
        tail = generated[:, -limit:]
        at_limit = ((tail == tail[:, -1:]).all(dim=1) & (limits == limit)).nonzero().squeeze(1)
        scores[at_limit, tail[at_limit, -1]] = -math.inf


def _real_tokens(src: torch.Tensor) -> list[list[int]]:
    return [[t for t in row if t != PAD_ID] for row in src.tolist()]


def ban_repeats_by_row_(scores: torch.Tensor, prefix: torch.Tensor, sizes: torch.Tensor) -> None:
    """`ban_repeats_` with each row's own guard size (R,): the rows of each size together."""
    for n in sizes.unique().tolist():
        if n >= 2:
            ban_repeats_(scores, prefix, n, sizes == n)


def ban_repeats_(scores: torch.Tensor, prefix: torch.Tensor, n: int, guarded: torch.Tensor) -> None:
    """Set to -inf, in place, each row's scores (R, V) for the tokens that would repeat a sequence
    of `n` tokens its prefix (R, 1 + t; [SOS] first) already holds, in the rows `guarded` (R,)
    marks. A loop then has to end: `decode.no_repeat_ngram`, CTranslate2's no_repeat_ngram_size."""
    generated = prefix[:, 1:]
    if n < 2 or generated.size(1) < n:  # no earlier window with a token after it
        return
    windows = generated.unfold(1, n - 1, 1)  # (R, t - n + 2, n - 1)
    seen = (windows[:, :-1] == windows[:, -1:]).all(dim=-1) & guarded[:, None]  # (R, t - n + 1)
    follows = generated[:, n - 1 :]  # the token after each earlier window
    hits = torch.zeros(scores.shape, device=scores.device).scatter_add_(1, follows, seen.float())
    scores.masked_fill_(hits > 0, -math.inf)


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    use_cache: bool = True,
    *,
    ban_unk: bool = False,
    no_repeat_ngram: int = 0,
    max_run: int = 0,
    search: str = "exact",
) -> list[list[int]]:
    """Greedy outputs (ids, without [SOS]/[EOS]) for a (B, S) source batch.

    Each sentence stops at its own [EOS] or its length budget. Finished rows leave the batch once a
    quarter of it has finished: compacting the cache at every finished row costs more than it saves.
    `use_cache=False` recomputes the whole prefix at every step (the slow reference). With `ban_unk`
    [UNK] is never chosen; with `no_repeat_ngram` no output repeats that many tokens, or more
    where its source repeats as many (`guard_size`); with `max_run` no token follows itself more
    than that many times in a row, or more where its source does (`run_limit`). With `search`
    `transformers`, the last token of the length budget is [EOS], as `generate` forces it.
    """
    was_training = model.training
    model.eval()
    B = src.size(0)
    limits = max_output_lengths(src, max_len_a, max_len_b, model.cfg.max_positions)
    memory, src_mask = model.encode(src)
    cache = model.new_cache() if use_cache else None
    prefix = torch.full((B, 1), SOS_ID, dtype=torch.long, device=src.device)  # (b, t) batch rows
    rows = torch.arange(B, device=src.device)  # original sentence of each batch row
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)  # (b,) rows already done
    outputs: list[list[int]] = [[] for _ in range(B)]
    guards = guard_sizes(src, no_repeat_ngram)  # (b,) each row's repeat guard
    runs = run_limits(src, max_run)  # (b,) each row's longest run of one token
    for step in range(int(limits.max())):
        step_input = prefix[:, -1:] if use_cache else prefix
        hidden = model.decode(step_input, memory, src_mask, cache)[:, -1]  # (b, D)
        logits = model.project(hidden)  # (b, V)
        ban_specials_(logits)
        ban_pad_(logits)
        if ban_unk:
            logits[:, UNK_ID] = -math.inf
        if search == "transformers":
            force_eos_(logits, limits[rows] == step + 1)
        ban_repeats_by_row_(logits, prefix, guards)
        ban_runs_(logits, prefix, runs)
        next_ids = logits.argmax(dim=-1)  # (b,)
        ended = next_ids == EOS_ID
        for row, token, skip in zip(
            rows.tolist(), next_ids.tolist(), (finished | ended).tolist(), strict=True
        ):
            if not skip:
                outputs[row].append(token)
        finished |= ended | (limits[rows] <= step + 1)
        n_finished = int(finished.sum())
        if n_finished == finished.numel():
            break
        if 4 * n_finished >= finished.numel():
            keep = (~finished).nonzero().squeeze(1)
            rows, memory, src_mask = rows[keep], memory[keep], src_mask[keep]
            next_ids, prefix, finished = next_ids[keep], prefix[keep], finished[keep]
            guards, runs = guards[keep], runs[keep]
            if cache is not None:
                cache = reorder_cache(cache, keep)
        prefix = torch.cat([prefix, next_ids[:, None]], dim=1)
    model.train(was_training)
    return outputs


def translate_ids(
    model: Transformer,
    src: torch.Tensor,
    cfg: DecodeConfig,
    beam: int | None = None,
    detokenize: Callable[[list[int]], str] | None = None,
    source_chars: list[int] | None = None,
) -> list[list[int]]:
    """Outputs for a (B, S) batch: greedy when the beam (`beam`, else `cfg.beam`) is 1.

    With `cfg.mbr`, of each sentence's `beam` best hypotheses the one with the highest total
    chrF against the others (`translator.mbr`); `detokenize` gives their text, `source_chars`
    (each row's source length in characters, as typed) keeps the choice within `mbr.LONGEST`
    times it where a hypothesis is.
    """
    beam = cfg.beam if beam is None else beam
    guards = {
        "ban_unk": cfg.ban_unk,
        "no_repeat_ngram": cfg.no_repeat_ngram,
        "max_run": cfg.max_run,
    }
    if beam == 1:
        return greedy_decode(model, src, cfg.max_len_a, cfg.max_len_b, **guards, search=cfg.search)
    guards["search"] = cfg.search
    if not cfg.mbr:
        return beam_search(model, src, beam, cfg.alpha, cfg.max_len_a, cfg.max_len_b, **guards)
    if detokenize is None:
        raise ValueError("decode.mbr compares texts: translate_ids needs `detokenize`")
    nbest = beam_search_nbest(model, src, beam, cfg.alpha, cfg.max_len_a, cfg.max_len_b, **guards)
    chars = source_chars or [None] * len(nbest)
    return [
        mbr_choice([h.tokens for h in hyps[:beam]], detokenize, n)
        for hyps, n in zip(nbest, chars, strict=True)
    ]


# --------------------------------------------------------------------------- beam search


@dataclass(frozen=True)
class Hypothesis:
    """A finished beam hypothesis."""

    tokens: list[int]
    """Output ids, without [SOS]/[EOS]."""
    log_prob: float
    """Summed log-probability of the generated tokens, [EOS] included when it ended with one."""
    score: float
    """`log_prob` divided by the length penalty: what the search ranks by."""


def length_penalty(length: int, alpha: float, search: str = "exact") -> float:
    """GNMT's length penalty ((5 + length) / 6) ** alpha, or with `search` `transformers`,
    length ** alpha (transformers' and fairseq's); `length` counts generated tokens."""
    if search == "transformers":
        return float(length) ** alpha
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: torch.Tensor,
    beam: int = 4,
    alpha: float = 0.6,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    *,
    ban_unk: bool = False,
    no_repeat_ngram: int = 0,
    max_run: int = 0,
    search: str = "exact",
) -> list[list[int]]:
    """The best beam-search output (ids, without [SOS]/[EOS]) of each sentence of a (B, S) batch."""
    nbest = beam_search_nbest(
        model, src, beam, alpha, max_len_a, max_len_b,
        ban_unk=ban_unk, no_repeat_ngram=no_repeat_ngram, max_run=max_run, search=search,
    )  # fmt: skip
    return [hyps[0].tokens for hyps in nbest]


@torch.no_grad()
def beam_search_nbest(
    model: Transformer,
    src: torch.Tensor,
    beam: int = 4,
    alpha: float = 0.6,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    *,
    ban_unk: bool = False,
    no_repeat_ngram: int = 0,
    max_run: int = 0,
    search: str = "exact",
) -> list[list[Hypothesis]]:
    """Every finished hypothesis of each sentence of a (B, S) batch, best first.

    The sentences search together, `beam` rows each, over one cache. At each step the 2 * beam
    best extensions of a sentence are ranked: those ending in [EOS] among the first `beam` are
    finished, the `beam` best others live on. A sentence stops at its length budget (its live
    hypotheses finish there too), or once it has `beam` finished hypotheses that no live one can
    beat: a live log-probability only falls, and its length penalty is at most the budget's.
    With `ban_unk`, no hypothesis holds [UNK]; with `no_repeat_ngram`, none repeats that many
    tokens, or more where its source repeats as many (`guard_size`); with `max_run`, in none does
    a token follow itself more than that many times in a row, or more where its source does.

    With `search` `transformers` it searches as transformers' `generate` does: the penalty is
    length ** alpha, the stop tests the best live hypothesis at its present length (a heuristic:
    the exact bound is at the budget), and the last token of the budget is [EOS].
    """
    assert beam >= 1
    was_training = model.training
    model.eval()
    B, K, device = src.size(0), beam, src.device
    limits = max_output_lengths(src, max_len_a, max_len_b, model.cfg.max_positions).tolist()
    memory, src_mask = model.encode(src)
    rows = torch.arange(B, device=device).repeat_interleave(K)
    memory, src_mask = memory[rows], src_mask[rows]  # (B*K, S, D), (B*K, 1, 1, S)
    guards = guard_sizes(src, no_repeat_ngram)[rows]  # (B*K,)
    runs = run_limits(src, max_run)[rows]  # (B*K,)
    cache = model.new_cache()
    prefix = torch.full((B * K, 1), SOS_ID, dtype=torch.long, device=device)  # (n*K, t)
    scores = torch.full((B, K), -math.inf, device=device)  # (n, K) summed log-probs
    scores[:, 0] = 0.0  # one live row per sentence at first: the others would repeat it
    alive = list(range(B))  # the original sentence of each of the n live sentences
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    for step in range(max(limits)):
        n = len(alive)
        hidden = model.decode(prefix[:, -1:], memory, src_mask, cache)[:, -1]  # (n*K, D)
        logits = model.project(hidden)  # (n*K, V)
        ban_specials_(logits)
        log_probs = logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)
        ban_pad_(log_probs)
        if search == "transformers":
            at_limit = torch.tensor([limits[b] == step + 1 for b in alive], device=device)
            force_eos_(log_probs, at_limit.repeat_interleave(K))
        if ban_unk:
            log_probs[:, UNK_ID] = -math.inf
        ban_repeats_by_row_(log_probs, prefix, guards)
        ban_runs_(log_probs, prefix, runs)
        V = log_probs.size(-1)
        candidates = (scores.view(n * K, 1) + log_probs).view(n, K * V)
        top_scores, top = candidates.topk(2 * K, dim=1)  # (n, 2K), best first
        top_parent = torch.arange(n, device=device)[:, None] * K + top // V  # (n, 2K) rows
        top_token = top % V
        is_eos = top_token == EOS_ID
        ends = is_eos[:, :K] & top_scores[:, :K].isfinite()
        for i, c in ends.nonzero().tolist():
            log_prob = float(top_scores[i, c])
            tokens = prefix[top_parent[i, c], 1:].tolist()
            finished[alive[i]].append(
                Hypothesis(tokens, log_prob, log_prob / length_penalty(step + 1, alpha, search))
            )
        # Each row ends in [EOS] at most once, so at least K of the 2K candidates live on.
        rank = is_eos.long() * (2 * K) + torch.arange(2 * K, device=device)
        live = rank.argsort(dim=1)[:, :K]  # (n, K) the K best non-[EOS] candidates
        scores = top_scores.gather(1, live)
        parents = top_parent.gather(1, live).view(-1)  # (n*K,)
        prefix = torch.cat([prefix[parents], top_token.gather(1, live).view(-1, 1)], dim=1)
        best_live = scores.max(dim=1).values.tolist()
        done = []
        for i, b in enumerate(alive):
            if step + 1 >= limits[b]:  # the budget: the live hypotheses finish as they are
                _finish_live(finished[b], prefix[i * K : (i + 1) * K], scores[i], alpha, search)
                done.append(True)
            else:
                # transformers' rule: the best live hypothesis at its present length, step + 1
                reach = limits[b] if search == "exact" else step + 1
                done.append(_cannot_improve(finished[b], K, best_live[i], reach, alpha, search))
        if all(done):
            break
        keep = torch.tensor([i for i, d in enumerate(done) if not d], device=device)
        keep_rows = (keep[:, None] * K + torch.arange(K, device=device)).view(-1)
        alive = [alive[i] for i in keep.tolist()]
        scores, prefix = scores[keep], prefix[keep_rows]
        memory, src_mask = memory[keep_rows], src_mask[keep_rows]
        guards, runs = guards[keep_rows], runs[keep_rows]
        cache = reorder_cache(cache, parents[keep_rows])
    model.train(was_training)
    return [sorted(hyps, key=lambda h: h.score, reverse=True) for hyps in finished]


def _finish_live(
    finished: list[Hypothesis],
    prefix: torch.Tensor,
    scores: torch.Tensor,
    alpha: float,
    search: str = "exact",
) -> None:
    """Add a sentence's live hypotheses, (K, 1 + t) prefixes and their log-probs, to `finished`."""
    for row, log_prob in zip(prefix.tolist(), scores.tolist(), strict=True):
        if math.isfinite(log_prob):
            tokens = row[1:]
            finished.append(
                Hypothesis(tokens, log_prob, log_prob / length_penalty(len(tokens), alpha, search))
            )


def _cannot_improve(
    finished: list[Hypothesis],
    beam: int,
    best_live: float,
    length: int,
    alpha: float,
    search: str = "exact",
) -> bool:
    """Whether `beam` finished hypotheses score at least the best live one would at `length`."""
    if len(finished) < beam:
        return False
    kth_best = sorted((h.score for h in finished), reverse=True)[beam - 1]
    return kth_best >= best_live / length_penalty(length, alpha, search)
