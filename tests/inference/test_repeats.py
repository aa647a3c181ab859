"""The runaway guards: no output repeats a sequence of n tokens (`decode.no_repeat_ngram`) and no
token follows itself more than r times in a row (`decode.max_run`) unless its source does, in
greedy and beam search; the vectorised bans equal a plain count of the prefix."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from test_decode import MAX_LEN_A, MAX_LEN_B, make_model, make_src

from translator.config import DecodeConfig
from translator.inference.decode import ban_repeats_, ban_runs_, guard_sizes, translate_ids
from translator.inference.text import guard_size, longest_run, repeats_ngram, run_limit
from translator.specials import EOS_ID, PAD_ID, SOS_ID

V = 7


def banned_by_hand(prefix: list[int], n: int) -> set[int]:
    """Tokens that would complete, after `prefix` (without [SOS]), an n-gram it already holds."""
    tail = prefix[len(prefix) - (n - 1) :] if n > 1 else []
    return {
        prefix[start + n - 1]
        for start in range(len(prefix) - n + 1)
        if prefix[start : start + n - 1] == tail
    }


@given(
    rows=st.integers(0, 12).flatmap(
        lambda length: st.lists(
            st.lists(st.integers(4, V - 1), min_size=length, max_size=length),
            min_size=1,
            max_size=5,
        )
    ),
    n=st.integers(2, 5),
)
def test_the_ban_is_exactly_the_tokens_that_would_repeat_an_ngram(rows: list[list[int]], n: int):
    """Rows of one length (as the search's prefixes are); every third row is not guarded."""
    prefix = torch.tensor([[SOS_ID, *r] for r in rows], dtype=torch.long)
    scores = torch.zeros(len(rows), V)
    guarded = torch.tensor([i % 3 != 2 for i in range(len(rows))])
    ban_repeats_(scores, prefix, n, guarded)
    for i, r in enumerate(rows):
        expected = banned_by_hand(r, n) if guarded[i] else set()
        got = {t for t in range(V) if scores[i, t] == -math.inf}
        assert got == expected, (r, n)


@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("n", [2, 3])
def test_guarded_outputs_never_repeat_an_ngram_and_unguarded_ones_do(beam: int, n: int):
    """A random model with [EOS] unlikely loops until its budget; the guard stops every loop."""
    model = make_model(eos_bias=-2.0, tgt_vocab=12)
    src = make_src([6, 9, 12, 4, 8], seed=3)
    loose = DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=0, max_run=0)
    assert any(repeats_ngram(o, n) for o in translate_ids(model, src, loose, beam))
    guarded = DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=n)
    outputs = translate_ids(model, src, guarded, beam)
    rows = [[t for t in row if t != PAD_ID] for row in src.tolist()]
    assert not any(repeats_ngram(o, guard_size(r, n)) for o, r in zip(outputs, rows, strict=True))


def test_a_source_that_repeats_itself_raises_its_own_guard():
    src = make_src([6, 6], seed=1)
    src[1, 1:7] = torch.tensor([5, 6, 7, 5, 6, 7])  # a 3-token sequence twice
    assert guard_size(src[1].tolist(), 3) == 4  # the source repeats 3 tokens: 4 are guarded
    assert guard_size(src[1].tolist(), 5) == 5
    assert guard_size(src[1].tolist(), 0) == 0
    assert guard_sizes(src, 3).tolist() == [guard_size(src[0].tolist(), 3), 4]
    model = make_model(eos_bias=-2.0, tgt_vocab=12)
    cfg = DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=3)
    for beam in (1, 4):
        (out,) = translate_ids(model, src[1:], cfg, beam)
        assert not repeats_ngram(out, 4)
        loose = translate_ids(
            model,
            src[1:],
            DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=0, max_run=0),
            beam,
        )
        assert repeats_ngram(loose[0], 4)  # the guard had a loop to cut


def test_the_guard_changes_nothing_where_nothing_repeats():
    """On outputs that hold no repeat anyway, the guarded search finds the same outputs."""
    model, src = make_model(), make_src([7, 1, 12, 3])
    plain = DecodeConfig(max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, no_repeat_ngram=0, max_run=0)
    outputs = translate_ids(model, src, plain, 1)
    n = 1 + max(len(o) for o in outputs)  # longer than any output: it cannot repeat
    guarded = DecodeConfig(max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, no_repeat_ngram=n, max_run=0)
    assert translate_ids(model, src, guarded, 1) == outputs
    assert EOS_ID not in {t for o in outputs for t in o}


@pytest.mark.parametrize("value", [-1, 1])
def test_a_guard_of_one_token_or_less_is_refused(value: int):
    from translator.errors import ConfigError

    with pytest.raises(ConfigError, match="decode.no_repeat_ngram"):
        DecodeConfig(no_repeat_ngram=value).validate()


@given(
    rows=st.integers(0, 8).flatmap(
        lambda length: st.lists(
            st.lists(st.integers(4, 5), min_size=length, max_size=length),  # two tokens: runs
            min_size=1,
            max_size=6,
        )
    ),
    limits=st.lists(st.sampled_from([0, 2, 3, 4]), min_size=6, max_size=6),
)
def test_the_run_ban_is_exactly_the_token_that_would_run_too_long(
    rows: list[list[int]], limits: list[int]
):
    prefix = torch.tensor([[SOS_ID, *r] for r in rows], dtype=torch.long)
    scores = torch.zeros(len(rows), V)
    ban_runs_(scores, prefix, torch.tensor(limits[: len(rows)]))
    for r, limit, banned in zip(rows, limits, scores == -math.inf, strict=False):
        if limit and longest_run(r) > limit:
            continue  # a prefix the search cannot hold
        expected = {t for t in range(V) if limit and longest_run([*r, t]) > limit}
        assert {t for t in range(V) if banned[t]} == expected, (r, limit)


def test_a_run_is_the_most_times_one_token_comes_in_a_row():
    assert [longest_run(ids) for ids in ([], [5], [5, 5], [5, 6, 5], [6, 5, 5, 5, 6])] == [
        0, 1, 2, 1, 3,
    ]  # fmt: skip
    assert run_limit([2, 7, 7, 7, 7, 3], 3) == 4  # `ha ha ha ha`: as long a run may come back
    assert run_limit([2, 7, 8, 3], 3) == 3
    assert run_limit([2, 7, 7, 7, 7, 3], 0) == 0


@pytest.mark.parametrize("beam", [1, 4])
def test_no_token_runs_longer_than_the_limit_and_without_it_one_does(beam: int):
    """A random model drawn to one token writes it again and again; the run limit stops it, the
    n-gram guard alone lets it come as many times as the guard is long."""
    model = make_model(eos_bias=-2.0, tgt_vocab=12)
    with torch.no_grad():
        model.output.bias[5] += 4.0
    src = make_src([6, 9, 12, 4, 8], seed=3)
    src[4, 1:6] = 7  # this source has a run of five itself
    rows = [[t for t in row if t != PAD_ID] for row in src.tolist()]
    loose = DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=4, max_run=0)
    assert any(longest_run(o) > 3 for o in translate_ids(model, src, loose, beam))
    guarded = DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=4, max_run=2)
    outputs = translate_ids(model, src, guarded, beam)
    assert all(longest_run(o) <= run_limit(r, 2) for o, r in zip(outputs, rows, strict=True))
    assert run_limit(rows[4], 2) == 5 and max(longest_run(o) for o in outputs[:4]) == 2


@pytest.mark.parametrize("value", [-1, 1])
def test_a_run_limit_of_one_token_or_less_is_refused(value: int):
    from translator.errors import ConfigError

    with pytest.raises(ConfigError, match="decode.max_run"):
        DecodeConfig(max_run=value).validate()
