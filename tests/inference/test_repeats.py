"""The runaway guard (`decode.no_repeat_ngram`): no output repeats a sequence of n tokens unless its
source does, in greedy and beam search; the vectorised ban equals a plain count of the prefix."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from test_decode import MAX_LEN_A, MAX_LEN_B, make_model, make_src

from translator.config import DecodeConfig
from translator.inference.decode import ban_repeats_, guard_sizes, translate_ids
from translator.inference.text import guard_size, repeats_ngram
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
    loose = DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=0)
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
            model, src[1:], DecodeConfig(max_len_a=3.0, max_len_b=8, no_repeat_ngram=0), beam
        )
        assert repeats_ngram(loose[0], 4)  # the guard had a loop to cut


def test_the_guard_changes_nothing_where_nothing_repeats():
    """On outputs that hold no repeat anyway, the guarded search finds the same outputs."""
    model, src = make_model(), make_src([7, 1, 12, 3])
    plain = DecodeConfig(max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, no_repeat_ngram=0)
    outputs = translate_ids(model, src, plain, 1)
    n = 1 + max(len(o) for o in outputs)  # longer than any output: it cannot repeat
    guarded = DecodeConfig(max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, no_repeat_ngram=n)
    assert translate_ids(model, src, guarded, 1) == outputs
    assert EOS_ID not in {t for o in outputs for t in o}


@pytest.mark.parametrize("value", [-1, 1])
def test_a_guard_of_one_token_or_less_is_refused(value: int):
    from translator.errors import ConfigError

    with pytest.raises(ConfigError, match="decode.no_repeat_ngram"):
        DecodeConfig(no_repeat_ngram=value).validate()
