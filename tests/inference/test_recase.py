"""`decode.recase`: a sentence typed all in capitals reaches the engine in sentence case, and its
translation comes back in capitals; every other sentence passes as typed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from translator.data.tokenizer import train_tokenizer
from translator.inference.text import all_capitals, encode_sources, sentence_case, translate_texts

WORDS = ["The", "the", "meeting", "is", "cancelled", ".", "Where", "station", "?", "tom"]


def echo(tokenizer, recase: bool, sentences: list[str]) -> tuple[list[str], list[list[int]]]:
    """Translate with an engine that copies its input: what it saw, and what came back."""
    seen: list[list[int]] = []

    def decode(sources: list[list[int]]) -> list[list[int]]:
        seen.extend(sources)
        return [s[1:-1] for s in sources]  # without [SOS]/[EOS]

    out = translate_texts(sentences, tokenizer, tokenizer, 50, decode, recase=recase)
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
    cased = sentence_case(text)
    assert cased.lower() == text.lower() or len(cased) != len(text)  # ß and friends
    if all_capitals(text):
        assert not all_capitals(cased) or sum(c.isalpha() for c in cased) < 2


def test_what_counts_as_all_capitals() -> None:
    assert all_capitals("WHERE IS THE STATION?")
    assert all_capitals("NASA 2026!")
    assert not all_capitals("I")  # one letter says nothing
    assert not all_capitals("I saw NASA")
    assert not all_capitals("123 ...")
