"""Decoding invariants: cache == recomputation, beam 1 == greedy, batching, budgets, search quality.

The models are random (seeded) and run in float64, so that exact token comparisons do not hinge on
float32 rounding of near-ties; the output bias of [EOS] is raised so that sentences end at
different lengths.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from translator.config import DecodeConfig, ModelConfig
from translator.inference import decode as decode
from translator.inference.decode import (
    beam_search,
    beam_search_nbest,
    greedy_decode,
    length_penalty,
    max_output_lengths,
    translate_ids,
)
from translator.model.transformer import Transformer, build_model
from translator.specials import EOS_ID, PAD_ID, SOS_ID, UNK_ID

SRC_VOCAB = 30
MAX_LEN_A, MAX_LEN_B = 1.0, 4


def make_model(tgt_vocab: int = 24, eos_bias: float = 1.0, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(
        d_model=32, n_heads=2, encoder_layers=2, decoder_layers=2, d_ff=64, dropout=0.0,
        max_positions=64,
    )  # fmt: skip
    model = build_model(cfg, SRC_VOCAB, tgt_vocab).double().eval()
    with torch.no_grad():
        model.output.bias[EOS_ID] += eos_bias
    return model


def make_src(lengths: list[int], seed: int = 0) -> torch.Tensor:
    """A padded (B, S) batch: [SOS] words [EOS] [PAD]..., with the given numbers of words."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths) + 2), PAD_ID, dtype=torch.long)
    for row, n in enumerate(lengths):
        words = torch.randint(4, SRC_VOCAB, (n,), generator=gen)
        src[row, : n + 2] = torch.cat([torch.tensor([SOS_ID]), words, torch.tensor([EOS_ID])])
    return src


LENGTHS = [7, 1, 12, 3, 3, 9, 5, 2]


def limits_of(src: torch.Tensor, model: Transformer) -> list[int]:
    return max_output_lengths(src, MAX_LEN_A, MAX_LEN_B, model.cfg.max_positions).tolist()


@torch.no_grad()
def log_probs(
    model: Transformer, src_row: torch.Tensor, outputs: list[list[int]], limit: int
) -> list[float]:
    """Log-probability of each output by full forward passes, [EOS] included when it ended so."""
    targets = [out + [EOS_ID] if len(out) < limit else out for out in outputs]
    T = max(len(t) for t in targets)
    tgt_in = torch.full((len(targets), T), PAD_ID, dtype=torch.long)
    tgt_out = torch.full((len(targets), T), PAD_ID, dtype=torch.long)
    real = torch.zeros(len(targets), T, dtype=torch.bool)
    for i, t in enumerate(targets):
        real[i, : len(t)] = True
        tgt_in[i, : len(t)] = torch.tensor([SOS_ID, *t[:-1]])
        tgt_out[i, : len(t)] = torch.tensor(t)
    logits = model(src_row.expand(len(targets), -1), tgt_in)  # (N, T, V)
    logits[..., SOS_ID] = -math.inf  # never an output: the search normalises without it
    token_lp = logits.log_softmax(-1).gather(2, tgt_out[..., None])[..., 0]  # (N, T)
    return token_lp.masked_fill(~real, 0.0).sum(1).tolist()


def log_prob(model: Transformer, src_row: torch.Tensor, tokens: list[int], limit: int) -> float:
    return log_probs(model, src_row, [tokens], limit)[0]


def test_outputs_end_at_different_lengths():
    """The fixture is meaningful: some outputs stop at [EOS], others at their budget."""
    model, src = make_model(), make_src(LENGTHS)
    outputs = greedy_decode(model, src, MAX_LEN_A, MAX_LEN_B)
    limits = limits_of(src, model)
    ended = [len(o) < lim for o, lim in zip(outputs, limits, strict=True)]
    assert any(ended) and not all(ended)


def test_cached_greedy_equals_full_recomputation():
    model, src = make_model(), make_src(LENGTHS)
    cached = greedy_decode(model, src, MAX_LEN_A, MAX_LEN_B, use_cache=True)
    full = greedy_decode(model, src, MAX_LEN_A, MAX_LEN_B, use_cache=False)
    assert cached == full


@pytest.mark.parametrize("eos_bias", [0.0, 1.0, 3.0])
def test_beam_of_one_equals_greedy(eos_bias: float):
    model, src = make_model(eos_bias=eos_bias), make_src(LENGTHS)
    greedy = greedy_decode(model, src, MAX_LEN_A, MAX_LEN_B)
    assert beam_search(model, src, 1, 0.0, MAX_LEN_A, MAX_LEN_B) == greedy


def test_translate_ids_dispatches_on_the_beam():
    model, src = make_model(), make_src(LENGTHS)
    cfg = DecodeConfig(
        no_repeat_ngram=0, max_run=0, beam=3, alpha=0.6, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B
    )
    assert translate_ids(model, src, cfg, beam=1) == greedy_decode(model, src, MAX_LEN_A, MAX_LEN_B)
    assert translate_ids(model, src, cfg) == beam_search(model, src, 3, 0.6, MAX_LEN_A, MAX_LEN_B)


@pytest.mark.parametrize("beam", [1, 3])
def test_batched_equals_one_by_one(beam: int):
    model, src = make_model(), make_src(LENGTHS)
    together = translate_ids(
        model,
        src,
        DecodeConfig(no_repeat_ngram=0, max_run=0, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B),
        beam,
    )
    for row, n in enumerate(LENGTHS):
        alone = src[row : row + 1, : n + 2]  # without the batch's padding
        one = translate_ids(
            model,
            alone,
            DecodeConfig(no_repeat_ngram=0, max_run=0, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B),
            beam,
        )
        assert one == [together[row]], f"sentence {row}"


@pytest.mark.parametrize("beam", [1, 4])
def test_outputs_stop_at_eos_and_within_the_budget(beam: int):
    cfg = DecodeConfig(no_repeat_ngram=0, max_run=0, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B)
    src = make_src(LENGTHS)
    # [EOS] certain: every output is empty.
    assert translate_ids(make_model(eos_bias=1e3), src, cfg, beam) == [[]] * len(LENGTHS)
    # [EOS] impossible: every output runs to exactly its budget.
    model = make_model(eos_bias=-1e3)
    outputs = translate_ids(model, src, cfg, beam)
    assert [len(o) for o in outputs] == limits_of(src, model)
    # In general: never longer than the budget, and no [EOS] (or [SOS]) inside an output.
    model = make_model()
    for out, limit in zip(translate_ids(model, src, cfg, beam), limits_of(src, model), strict=True):
        assert len(out) <= limit
        assert EOS_ID not in out and SOS_ID not in out


def test_budget_is_capped_by_the_position_table():
    model, src = make_model(eos_bias=-1e3), make_src([3])
    outputs = greedy_decode(model, src, max_len_a=100.0, max_len_b=100)
    assert len(outputs[0]) == model.cfg.max_positions - 1


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_hypotheses_are_scored_by_the_model(alpha: float):
    model, src = make_model(), make_src(LENGTHS)
    limits = limits_of(src, model)
    nbest = beam_search_nbest(model, src, 4, alpha, MAX_LEN_A, MAX_LEN_B)
    for row, hyps in enumerate(nbest):
        assert len(hyps) >= 4
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for h in hyps:
            expected = log_prob(model, src[row], h.tokens, limits[row])
            assert h.log_prob == pytest.approx(expected, abs=1e-6)
            assert h.score == pytest.approx(
                h.log_prob / length_penalty(len(h.tokens) + (len(h.tokens) < limits[row]), alpha)
            )


def test_beam_scores_at_least_greedy():
    """With no length penalty, the beam's best output is at least as likely as greedy's."""
    model, src = make_model(), make_src(LENGTHS)
    limits = limits_of(src, model)
    greedy = greedy_decode(model, src, MAX_LEN_A, MAX_LEN_B)
    beam = beam_search(model, src, 5, 0.0, MAX_LEN_A, MAX_LEN_B)
    better = 0
    for row, (g, b) in enumerate(zip(greedy, beam, strict=True)):
        score_g = log_prob(model, src[row], g, limits[row])
        score_b = log_prob(model, src[row], b, limits[row])
        assert score_b >= score_g - 1e-9, f"sentence {row}"
        better += score_b > score_g + 1e-9
    assert better > 0, "the beam never found anything better than greedy: a weak test"


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_wide_beam_finds_the_exact_best_output(alpha: float):
    """A beam wider than any step's candidates searches exhaustively: it finds the best output."""
    tgt_vocab, limit = 6, 3
    model, src = make_model(tgt_vocab=tgt_vocab, eos_bias=1.5), make_src([4, 2, 6])
    words = [t for t in range(tgt_vocab) if t != EOS_ID]
    outputs = [list(seq) for n in range(limit + 1) for seq in itertools.product(words, repeat=n)]
    beam = tgt_vocab * len(words) ** (limit - 1)
    found = beam_search(model, src, beam, alpha, max_len_a=0.0, max_len_b=limit)
    lengths = [len(out) + (len(out) < limit) for out in outputs]  # generated, [EOS] included
    for row in range(src.size(0)):
        lp = log_probs(model, src[row], outputs, limit)
        scores = [s / length_penalty(n, alpha) for s, n in zip(lp, lengths, strict=True)]
        assert found[row] == outputs[scores.index(max(scores))], f"sentence {row}"


def test_stopping_early_changes_nothing(monkeypatch: pytest.MonkeyPatch):
    """A sentence stops only when searching on to its budget could not change its best `beam`."""
    model, src = make_model(eos_bias=2.0), make_src(LENGTHS)
    never_stop = lambda *args: False  # noqa: E731
    saved = 0
    for alpha in (0.0, 0.6, 2.0):  # 2.0: a bound that ignored the budget's penalty would fail
        early = beam_search_nbest(model, src, 3, alpha, MAX_LEN_A, MAX_LEN_B)
        with monkeypatch.context() as patch:
            patch.setattr(decode, "_cannot_improve", never_stop)
            full = beam_search_nbest(model, src, 3, alpha, MAX_LEN_A, MAX_LEN_B)
        for row, (e, f) in enumerate(zip(early, full, strict=True)):
            assert [h.tokens for h in e[:3]] == [h.tokens for h in f[:3]], f"{alpha=} {row=}"
        saved += sum(map(len, full)) - sum(map(len, early))
    assert saved > 0, "no sentence stopped early: a weak test"


def unk_favoured_model() -> Transformer:
    model = make_model()
    with torch.no_grad():
        model.output.bias[UNK_ID] += 5.0  # [UNK] the likeliest word almost everywhere
    return model


@pytest.mark.parametrize("beam", [1, 4])
def test_ban_unk_removes_unk(beam: int):
    model, src = unk_favoured_model(), make_src(LENGTHS)
    shown = translate_ids(
        model,
        src,
        DecodeConfig(no_repeat_ngram=0, max_run=0, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B),
        beam,
    )
    assert sum(o.count(UNK_ID) for o in shown) > len(LENGTHS)
    cfg = DecodeConfig(
        no_repeat_ngram=0, max_run=0, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, ban_unk=True
    )
    banned = translate_ids(model, src, cfg, beam)
    assert all(UNK_ID not in o for o in banned)
    assert sum(map(len, banned)) > 0


def test_ban_unk_greedy_takes_the_best_known_word():
    """Banned, greedy equals greedy on the same model with an [UNK] that can never win."""
    src = make_src(LENGTHS)
    banned = greedy_decode(unk_favoured_model(), src, MAX_LEN_A, MAX_LEN_B, ban_unk=True)
    never = make_model()
    with torch.no_grad():
        never.output.bias[UNK_ID] -= 1e4
    assert banned == greedy_decode(never, src, MAX_LEN_A, MAX_LEN_B)


def test_ban_unk_beam_keeps_the_model_scores():
    """Banned, the beam still ranks by the model's own log-probabilities (no renormalisation
    without [UNK], as fairseq's --unkpen): the most likely [UNK]-free outputs."""
    model, src = unk_favoured_model(), make_src(LENGTHS)
    limits = limits_of(src, model)
    nbest = beam_search_nbest(model, src, 4, 0.6, MAX_LEN_A, MAX_LEN_B, ban_unk=True)
    for row, hyps in enumerate(nbest):
        for h in hyps:
            assert UNK_ID not in h.tokens
            expected = log_prob(model, src[row], h.tokens, limits[row])
            assert h.log_prob == pytest.approx(expected, abs=1e-6)
