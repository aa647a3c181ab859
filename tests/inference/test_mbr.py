"""MBR selection: the chrF utility is sacreBLEU's, the choice is the consensus, and decoding with
`decode.mbr` outputs one of the beam's hypotheses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import CHRF
from test_decode import LENGTHS, MAX_LEN_A, MAX_LEN_B, make_model, make_src

from translator.config import DecodeConfig
from translator.inference.decode import beam_search, beam_search_nbest, translate_ids
from translator.inference.mbr import LONGEST, char_ngrams, chrf, consensus, mbr_choice

SACREBLEU_CHRF = CHRF()

# Short texts over a few letters, with spaces: many shared n-grams, empty and one-letter cases.
texts = st.text(alphabet="abcè '.", max_size=24)


@settings(max_examples=300, deadline=None)
@given(hyp=texts, ref=texts)
def test_chrf_is_sacrebleus_sentence_chrf(hyp: str, ref: str) -> None:
    expected = SACREBLEU_CHRF.sentence_score(hyp, [ref]).score
    assert chrf(char_ngrams(hyp), char_ngrams(ref)) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(candidates=st.lists(texts, min_size=1, max_size=6))
def test_consensus_maximises_the_total_chrf_against_the_others(candidates: list[str]) -> None:
    def total(i: int) -> float:
        return sum(
            SACREBLEU_CHRF.sentence_score(candidates[i], [other]).score
            for j, other in enumerate(candidates)
            if j != i
        )

    chosen = consensus(candidates)
    best = max(total(i) for i in range(len(candidates)))
    assert total(chosen) == pytest.approx(best, abs=1e-6)
    # A tie goes to the earliest candidate (the beam's preferred one).
    assert all(total(i) < best - 1e-6 for i in range(chosen))


def test_the_odd_one_out_is_never_chosen() -> None:
    candidates = ["Il gatto dorme.", "Tom è qui.", "Il gatto dorme!", "Il gatto dorme sempre."]
    assert consensus(candidates) != 1
    assert consensus(["solo"]) == 0 and consensus([]) == 0


def test_mbr_choice_returns_ids_and_handles_one_or_no_candidate() -> None:
    words = {1: "il", 2: "gatto", 3: "cane", 4: "dorme"}

    def text(ids: list[int]) -> str:
        return " ".join(words[i] for i in ids)

    # Two hypotheses read the same: together they outvote the others.
    assert mbr_choice([[3, 4], [1, 2, 4], [2, 4, 1], [1, 2, 4]], text) == [1, 2, 4]
    assert mbr_choice([[3]], text) == [3]
    assert mbr_choice([], text) == []


def _cfg(beam: int) -> DecodeConfig:
    return DecodeConfig(
        beam=beam,
        alpha=0.6,
        max_len_a=MAX_LEN_A,
        max_len_b=MAX_LEN_B,
        mbr=True,
        no_repeat_ngram=0,
        max_run=0,
    )


@pytest.mark.parametrize("beam", [2, 5])
def test_decoding_with_mbr_outputs_one_of_the_beams_hypotheses(beam: int) -> None:
    model, src = make_model(), make_src(LENGTHS)
    nbest = beam_search_nbest(model, src, beam, 0.6, MAX_LEN_A, MAX_LEN_B)
    out = translate_ids(model, src, _cfg(beam), detokenize=lambda ids: " ".join(map(str, ids)))
    assert len(out) == len(LENGTHS)
    for chosen, hyps in zip(out, nbest, strict=True):
        assert chosen in [h.tokens for h in hyps[:beam]]
    # On this random model MBR does choose differently from the beam somewhere.
    assert out != beam_search(model, src, beam, 0.6, MAX_LEN_A, MAX_LEN_B)


def test_mbr_with_indistinguishable_texts_is_beam_search() -> None:
    model, src = make_model(), make_src(LENGTHS)
    out = translate_ids(model, src, _cfg(4), detokenize=lambda ids: "same text")
    assert out == beam_search(model, src, 4, 0.6, MAX_LEN_A, MAX_LEN_B)


def test_mbr_is_off_for_greedy_and_needs_the_texts() -> None:
    model, src = make_model(), make_src(LENGTHS)
    greedy = translate_ids(model, src, _cfg(4), beam=1)  # no texts needed: nothing to choose
    plain = DecodeConfig(max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, no_repeat_ngram=0, max_run=0)
    assert greedy == translate_ids(model, src, plain)
    with pytest.raises(ValueError, match="detokenize"):
        translate_ids(model, src, _cfg(4))


@settings(max_examples=200, deadline=None)
@given(candidates=st.lists(texts, min_size=1, max_size=6), data=st.data())
def test_consensus_among_allowed_maximises_over_them_with_every_text_as_evidence(
    candidates: list[str], data: st.DataObject
) -> None:
    allowed = data.draw(
        st.lists(st.integers(0, len(candidates) - 1), min_size=1, unique=True).map(sorted)
    )
    grams = [char_ngrams(t) for t in candidates]

    def total(i: int) -> float:
        return sum(chrf(grams[i], grams[j]) for j in range(len(candidates)) if j != i)

    chosen = consensus(candidates, allowed)
    assert chosen in allowed
    assert total(chosen) == pytest.approx(max(total(i) for i in allowed), abs=1e-6)
    assert consensus(candidates, range(len(candidates))) == consensus(candidates)


def test_a_hypothesis_too_long_for_its_source_is_chosen_only_when_all_are() -> None:
    words = {1: "Ha", 2: "fatto", 3: "un", 4: "po'", 5: "d'occhiata.", 6: "Sciò.", 7: "Sciava."}

    def text(ids: list[int]) -> str:
        return " ".join(words[i] for i in ids)

    long = [1, 2, 3, 4, 5]  # 27 characters; the others agree with it most
    candidates = [[6], long, [1, 2, 3, 4], [2, 3, 4, 5], [7]]
    assert mbr_choice(candidates, text) == long
    assert len(text(long)) > LONGEST * len("he skied")
    chosen = mbr_choice(candidates, text, len("he skied"))
    assert chosen != long and len(text(chosen)) <= LONGEST * len("he skied")
    # A source long enough for it: the choice is the plain consensus.
    assert mbr_choice(candidates, text, len(text(long))) == long
    # None within the bound: the bound does not apply.
    assert mbr_choice([long, [1, 2, 3, 4, 7]], text, 1) == mbr_choice([long, [1, 2, 3, 4, 7]], text)


def test_mbr_decoding_keeps_each_row_within_its_source_bound_where_it_can() -> None:
    model, src = make_model(), make_src(LENGTHS)

    def detokenize(ids: list[int]) -> str:
        return " ".join(map(str, ids))

    nbest = beam_search_nbest(model, src, 5, 0.6, MAX_LEN_A, MAX_LEN_B)
    texts = [[detokenize(h.tokens) for h in hyps[:5]] for hyps in nbest]
    # Each row's bound: its shortest hypothesis fits, and the plain MBR choice of some row does not.
    chars = [-(-min(len(t) for t in row) // LONGEST) for row in texts]
    plain = translate_ids(model, src, _cfg(5), detokenize=detokenize)
    assert any(len(detokenize(out)) > LONGEST * n for out, n in zip(plain, chars, strict=True))
    bounded = translate_ids(model, src, _cfg(5), detokenize=detokenize, source_chars=chars)
    for out, n, row in zip(bounded, chars, texts, strict=True):
        assert detokenize(out) in row and len(detokenize(out)) <= LONGEST * n
