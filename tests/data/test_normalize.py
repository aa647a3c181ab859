"""Normalisation: NFC, and Italian accents written as apostrophes, on real subtitle cases."""

from __future__ import annotations

import pytest

from translator.config import DataConfig
from translator.data.clean import FilterStats, clean_pairs, normalize_pairs
from translator.data.normalize import accent_lexicon, nfc, restore_accents

# Accented words as a corpus would have them, some written properly somewhere in it.
LEXICON = accent_lexicon(["perché " * 5, "perchè " * 2, "città " * 3, "caffè " * 2, "né " * 2])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Il matrimonio e' una meravigliosa istituzione.",
            "Il matrimonio è una meravigliosa istituzione.",
        ),
        ("E' incredibile.", "È incredibile."),
        ("Allora perche' sei venuta qui?", "Allora perché sei venuta qui?"),
        ("Perche'?", "Perché?"),
        ("PERCHE' NO?", "PERCHÉ NO?"),
        ("Non ho paura della verita'.", "Non ho paura della verità."),
        ("Si', ma fa parte del protocollo.", "Sì, ma fa parte del protocollo."),
        ("Dimmi dov'e' Sameen.", "Dimmi dov'è Sameen."),
        ("C'e' qualcosa, com'e' possibile?", "C'è qualcosa, com'è possibile?"),
        (
            "Chi lo sa, magari domani indossero' una tuta.",
            "Chi lo sa, magari domani indosserò una tuta.",
        ),
        ("Sono certo che ama piu' te, gia'.", "Sono certo che ama più te, già."),
        ("Un caffe' in citta'", "Un caffè in città"),
        ("Finche' puo'", "Finché può"),
    ],
)
def test_apostrophe_accents_are_restored(text: str, expected: str) -> None:
    assert restore_accents(text, LEXICON) == expected


@pytest.mark.parametrize(
    "text",
    [
        "L'uomo dell'anno, un'altra volta.",  # elisions join the next word
        "Dell' acqua, quest' anno, tutt' altro.",  # an apostrophe after a consonant
        "Aspetta un po', de' Medici.",  # truncations of one syllable
        "Be', fa' come vuoi, va' via, di' qualcosa, sta' zitto, da' retta.",  # imperatives
        "So' ragazzi, mo' basta.",  # Roman truncations
        "Ha detto 'ciao' e 'arrivederci'.",  # single quotes
        "Ne' tu ne' io.",  # ambiguous (né / nei): left alone
        "è già così, perché più",  # already right
    ],
)
def test_elisions_truncations_and_quotes_stay(text: str) -> None:
    assert restore_accents(text, LEXICON) == text


def test_a_long_word_outside_the_lexicon_and_the_endings_stays() -> None:
    assert restore_accents("venerdi' e' qui", LEXICON) == "venerdi' è qui"
    assert restore_accents("venerdi'", accent_lexicon(["venerdì", "venerdì"])) == "venerdì"


def test_the_corpus_spelling_decides_between_grave_and_acute() -> None:
    lexicon = accent_lexicon(["trentatré"] * 3 + ["trentatrè"])
    assert restore_accents("trentatre'", lexicon) == "trentatré"
    assert restore_accents("cioe'", accent_lexicon(["cioè", "cioè"])) == "cioè"


def test_nfc_composes_accents() -> None:
    assert nfc("perche\u0301 e\u0300") == "perché è"
    assert len(nfc("e\u0300")) == 1


def test_normalize_pairs_touches_only_the_italian_side_and_counts() -> None:
    pairs = [("It's e' here", "E' qui"), ("l'uomo", "l'uomo"), ("cafe\u0301", "caffe\u0300")]
    cfg = DataConfig(restore_accents=True)
    assert normalize_pairs(pairs, cfg) == [
        ("It's e' here", "È qui"),
        ("l'uomo", "l'uomo"),
        ("café", "caffè"),
    ]
    stats = FilterStats()
    clean_pairs(pairs, stats, cfg)
    assert stats.normalized == 2
    # Italian as the source language: the source side is the one restored.
    swapped = DataConfig(lang_src="it", lang_tgt="en", restore_accents=True)
    assert normalize_pairs([("E' qui", "e' x")], swapped) == [("È qui", "e' x")]


def test_normalize_none_keeps_the_text() -> None:
    pairs = [("cafe\u0301", "e' caffe\u0300")]
    assert normalize_pairs(pairs, DataConfig(normalize="none")) == pairs
