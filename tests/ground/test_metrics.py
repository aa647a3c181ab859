"""corpus_scores on fixed strings: BLEU worked out by hand, and both scores equal sacreBLEU's."""

from __future__ import annotations

import math

import pytest
import sacrebleu

from translator.metrics import corpus_scores


def test_bleu_by_hand_on_fixed_strings() -> None:
    # 1- to 4-gram matches 5/6, 3/5, 1/4, 0/3; sacreBLEU's default `exp` smoothing turns the zero
    # into 1 / (2 * 3); equal lengths, so no brevity penalty.
    scores = corpus_scores(["the cat sat on the mat"], ["the cat is on the mat"])
    by_hand = 100 * math.exp((math.log(5 / 6 * 3 / 5 * 1 / 4 * 1 / 6)) / 4)
    assert scores.bleu == pytest.approx(by_hand, abs=1e-9)  # 37.99
    # Every n-gram right, one word short of the reference: the brevity penalty alone.
    short = corpus_scores(["the cat is on the"], ["the cat is on the mat"])
    assert short.bleu == pytest.approx(100 * math.exp(1 - 6 / 5), abs=1e-9)  # 81.87
    assert corpus_scores(["il gatto è rosso ."], ["il gatto è rosso ."]).bleu == pytest.approx(100)


@pytest.mark.parametrize(
    ("hypotheses", "references"),
    [
        (["il gatto è rosso .", "due cani ."], ["il gatto è grande .", "due cani ."]),
        (["uno due tre"], ["tre due uno"]),
        (["", "casa"], ["la casa", "casa"]),
    ],
)
def test_scores_equal_sacrebleu_on_fixed_strings(
    hypotheses: list[str], references: list[str]
) -> None:
    scores = corpus_scores(hypotheses, references)
    assert scores.bleu == sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert scores.chrf == sacrebleu.corpus_chrf(hypotheses, [references]).score
    assert scores.bleu_signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")
    assert scores.chrf_signature.startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0")


def test_chrf_on_fixed_strings() -> None:
    assert corpus_scores(["casa"], ["casa"]).chrf == pytest.approx(100)
    assert corpus_scores(["zzzz"], ["casa"]).chrf == pytest.approx(0)
