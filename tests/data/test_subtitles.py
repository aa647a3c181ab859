"""data.subtitles: the subtitle habits taken out, on lines of the kind the shared corpus holds,
and the misaligned pairs dropped."""

from __future__ import annotations

import pytest

from translator.config import DataConfig
from translator.data.clean import FilterStats, clean_pairs
from translator.data.subtitles import clean_subtitle_pair


@pytest.mark.parametrize(
    ("pair", "want"),
    [
        (("- Who said so?", "- Chi l'ha detto?"), ("Who said so?", "Chi l'ha detto?")),
        (("- Yes. - No.", "- Sì. - No."), ("Yes. No.", "Sì. No.")),
        (("-Where is he?", "- Dov'è?"), ("Where is he?", "Dov'è?")),
        (("Wait... - What?", "Aspetta... - Cosa?"), ("Wait... What?", "Aspetta... Cosa?")),
        (("Hi. - Hello.", "- Ciao. - Salve."), ("Hi. Hello.", "Ciao. Salve.")),
        (("[sighs] I'm tired.", "[sospira] Sono stanco."), ("I'm tired.", "Sono stanco.")),
        (
            ("♪ Happy birthday to you ♪", "♪ Tanti auguri a te ♪"),
            ("Happy birthday to you", "Tanti auguri a te"),
        ),  # fmt: skip
        (("JOHN: Come here.", "Vieni qui."), ("Come here.", "Vieni qui.")),
        # ordinary text is left alone: hyphens, minus signs, brackets, short identical lines
        (("A well-known fact.", "Un fatto noto."), ("A well-known fact.", "Un fatto noto.")),
        (("It's 5 - 3 now.", "Ora è 5 - 3."), ("It's 5 - 3 now.", "Ora è 5 - 3.")),
        (
            ("He left (again).", "È partito (di nuovo)."),
            ("He left (again).", "È partito (di nuovo)."),
        ),
        (("OK.", "OK."), ("OK.", "OK.")),
    ],
)
def test_subtitle_marks_are_taken_out(pair: tuple[str, str], want: tuple[str, str]) -> None:
    assert clean_subtitle_pair(pair) == want


@pytest.mark.parametrize(
    "pair",
    [
        ("- Yes. - No.", "Sì."),  # two turns against one
        ("Hi. - Hello.", "Ciao."),  # a second speaker's turn, marked mid-line, against one
        ("Sure.", "Certo. - E tu?"),
        ("Thank you.", "Grazie mille a tutti voi per essere venuti qui stasera."),  # 3x longer
        ("I don't know what to say", "I don't know what to say"),  # left in English
        ("[music]", "[musica]"),  # nothing left
    ],
)
def test_misaligned_pairs_are_dropped(pair: tuple[str, str]) -> None:
    assert clean_subtitle_pair(pair) is None


def test_the_data_summary_counts_them_and_the_option_is_off_by_default() -> None:
    pairs = [("- Who?", "- Chi?"), ("- Yes. - No.", "Sì."), ("Fine.", "Bene.")]
    off = FilterStats()
    assert clean_pairs(pairs, off, DataConfig()) == pairs
    on = FilterStats()
    assert clean_pairs(pairs, on, DataConfig(subtitles=True)) == [
        ("Who?", "Chi?"),
        ("Fine.", "Bene."),
    ]
    assert (on.subtitle_changed, on.subtitle_dropped, on.read) == (1, 1, 3)
    assert "subtitle marks taken out of 1 pairs, 1 misaligned pairs dropped" in on.summary()
    assert "subtitle" not in off.summary()
