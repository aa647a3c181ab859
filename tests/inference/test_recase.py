"""`decode.recase` and `decode.truecase`: a sentence typed all in capitals reaches the engine in
sentence case (with the casing table's capitals), and its translation comes back in capitals; one
typed with no capital reaches it with the table's capitals; every other sentence passes as typed.
The table holds the words the data writes with capitals, where no sentence starts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from translator.data.casing import learn_casing, load_casing, save_casing, truecase
from translator.data.tokenizer import train_tokenizer
from translator.errors import CheckpointError
from translator.inference.text import all_capitals, all_lower, encode_sources, translate_texts

WORDS = ["The", "the", "meeting", "is", "cancelled", ".", "Where", "station", "?", "tom"]


def echo(
    tokenizer, recase: bool, sentences: list[str], casing: dict[str, str] | None = None
) -> tuple[list[str], list[list[int]]]:
    """Translate with an engine that copies its input: what it saw, and what came back."""
    seen: list[list[int]] = []

    def decode(sources: list[list[int]], chars: list[int]) -> list[list[int]]:
        # Each source's length is the sentence's as typed, whatever the engine is given to read.
        assert chars == [len(s) for s in sentences if s.strip()]
        seen.extend(sources)
        return [s[1:-1] for s in sources]  # without [SOS]/[EOS]

    out = translate_texts(sentences, tokenizer, tokenizer, 50, decode, recase=recase, casing=casing)
    return out, seen


def test_capitals_are_translated_in_sentence_case_and_written_back_in_capitals() -> None:
    tokenizer = train_tokenizer([" ".join(WORDS)] * 3, min_freq=1, kind="word")
    sentences = ["THE MEETING IS CANCELLED .", "Where is the station ?", ""]
    out, seen = echo(tokenizer, True, sentences)
    assert seen == encode_sources(tokenizer, ["The meeting is cancelled .", sentences[1]], 50)
    assert out == ["THE MEETING IS CANCELLED .", "Where is the station ?", ""]
    out, seen = echo(tokenizer, False, sentences)  # off: the capitals reach the engine
    assert seen == encode_sources(tokenizer, sentences[:2], 50)


@given(st.text(max_size=40))
def test_sentence_case_changes_only_the_case(text: str) -> None:
    cased = truecase(text.lower(), {})  # no table: sentence case
    assert cased.casefold() == text.casefold() or len(cased) != len(text)  # µ, ß and friends
    if all_capitals(text):
        assert not all_capitals(cased) or sum(c.isalpha() for c in cased) < 2


def test_what_counts_as_all_capitals() -> None:
    assert all_capitals("WHERE IS THE STATION?")
    assert all_capitals("NASA 2026!")
    assert not all_capitals("I")  # one letter says nothing
    assert not all_capitals("I saw NASA")
    assert not all_capitals("123 ...")


TEXTS = [
    "Yesterday I saw Tom at the station.",
    "Did Tom say that I was in Boston?",
    "We watched TV with Tom in Boston.",
    "Will you pay the bill, Bill?",
    "I will pay the bill.",
    "He will come with tom to see TV.",
    "THE MEETING IS CANCELLED.",  # in capitals: says nothing of each word
    "Read the Hotel Guide.",  # seen once with capitals: a title, not the word's usual case
]


def test_the_table_holds_the_words_written_with_capitals_where_no_sentence_starts() -> None:
    table = learn_casing(TEXTS)
    assert table["tom"] == "Tom"  # 3 with capitals, 1 without: more than twice as often
    assert table["i"] == "I" and table["tv"] == "TV" and table["boston"] == "Boston"
    assert "bill" not in table  # `the bill` twice, `Bill` once
    assert "will" not in table and "yesterday" not in table  # only ever first: says nothing
    assert "did" not in table and "the" not in table
    assert "meeting" not in table and "hotel" not in table


def test_a_sentence_without_capitals_reaches_the_engine_with_the_tables() -> None:
    table = learn_casing(TEXTS)
    tokenizer = train_tokenizer(
        [" ".join(WORDS), "Is Tom also coming", "I saw"] * 3 + TEXTS, min_freq=1, kind="word"
    )
    typed = ["is tom also coming", "Is tom also coming", "I SAW TOM .", "123 ..."]
    out, seen = echo(tokenizer, True, typed, table)
    wanted = ["Is Tom also coming", typed[1], "I saw Tom .", typed[3]]
    assert seen == encode_sources(tokenizer, wanted, 50)
    assert out[0] == "Is Tom also coming" and out[2] == "I SAW TOM ."  # capitals again
    _, seen = echo(tokenizer, True, typed, None)  # no table: lower case passes as typed
    assert seen == encode_sources(tokenizer, [typed[0], typed[1], "I saw tom .", typed[3]], 50)


@given(st.text(alphabet=st.sampled_from("abtomiTOMI .,'?"), max_size=40))
def test_truecasing_changes_only_the_case(text: str) -> None:
    cased = truecase(text, {"tom": "Tom", "i": "I"})
    assert cased.lower() == text.lower()
    if all_lower(text):
        assert not all_lower(cased)


def test_a_sentence_starting_with_a_number_keeps_its_first_word() -> None:
    assert truecase("3 apples for tom", {"tom": "Tom"}) == "3 apples for Tom"
    assert truecase("'where is tom'", {"tom": "Tom"}) == "'Where is Tom'"


def test_the_table_is_saved_and_a_damaged_one_is_one_line(tmp_path) -> None:
    assert load_casing(tmp_path) is None  # a run made before casing.json: no table
    save_casing({"tom": "Tom"}, tmp_path / "casing.json")
    assert load_casing(tmp_path) == {"tom": "Tom"}
    (tmp_path / "casing.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match=r"casing.json: not a casing table.*delete it"):
        load_casing(tmp_path)
