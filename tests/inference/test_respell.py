"""`decode.respell`: a word typed with a typo reaches the engine as the training data spells it.
The table counts the words of the data's source side; a word is read as the word one typo away
(two letters swapped, one doubled, one dropped) that the data wrote at least 100 times as often."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from translator.data.spelling import (
    LONGEST,
    RATIO,
    TRUSTED,
    WORD,
    learn_spelling,
    load_spelling,
    one_typo_away,
    respell,
    save_spelling,
)
from translator.data.tokenizer import train_tokenizer
from translator.data.typed import with_typos
from translator.errors import CheckpointError
from translator.inference.text import encode_sources, translate_texts

COUNTS = {"what": 900, "and": 800, "the": 1000, "want": 300, "tom": 200, "her": 500, "hear": 20,
          "hat": 31, "that": 700, "is": 950, "it": 990, "stupidity": 1, "eu": 3,
          "i'm": 400, "don't": 300, "i": 2000, "sure": 100, "bishop's": 3}  # fmt: skip


def test_the_table_counts_each_word_in_lower_case() -> None:
    counts = learn_spelling(["Don't go, Tom!", "I don't know TOM.", "3 cats"])
    assert counts == {"don't": 2, "go": 1, "tom": 2, "i": 1, "know": 1, "cats": 1}


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("waht is it", "what is it"),  # two letters swapped
        ("annd the", "and the"),  # one doubled
        ("I wnt it", "I want it"),  # one dropped
        ("Im sure I dont", "I'm sure I don't"),  # an apostrophe left out
        ("two bishops", "two bishops"),  # bishop's is rare: a plural, no typo of it
        ("Waht is it?", "What is it?"),  # the case as typed
        ("WAHT IS IT", "WHAT IS IT"),  # a sentence in capitals
        ("stuupidity", "stupidity"),  # a word seen once is better than one never seen
        ("the EU is", "the EU is"),  # capitals inside a sentence that is not: as typed
        ("hte cat", "the cat"),  # swapped at the start; cat unknown, nothing one typo away
        ("that hat", "that hat"),  # seen more than TRUSTED times: as typed
        ("a 3rd time", "a 3rd time"),  # nothing one typo away from rd or time
    ],
)
def test_a_typo_is_read_as_the_word_the_data_writes(typed: str, read: str) -> None:
    assert respell(typed, COUNTS) == read


def test_a_word_over_the_longest_is_read_as_typed_and_at_once() -> None:
    longest = "x" * LONGEST
    assert respell(longest, {longest[1:]: 100}) == longest[1:]  # one doubled: respelt
    assert respell(longest + "x", {longest: 100}) == longest + "x"  # one letter too many
    assert respell("a" * 10**5, {"a": 1}) == "a" * 10**5  # whatever is pasted: no wait


def test_the_thresholds_are_those_documented() -> None:
    rare = {"ot": 5, "to": 5 * RATIO}  # exactly RATIO times as often: read as to
    assert respell("ot", rare) == "to"
    assert respell("ot", {**rare, "to": 5 * RATIO - 1}) == "ot"
    assert respell("hat", {"hat": TRUSTED, "that": RATIO * TRUSTED}) == "that"
    assert respell("hat", {"hat": TRUSTED + 1, "that": 10**6}) == "hat"  # trusted


@given(st.lists(st.sampled_from(sorted(COUNTS)), max_size=12), st.sampled_from([" ", ", ", "! "]))
def test_words_the_data_wrote_often_pass_as_typed(words: list[str], sep: str) -> None:
    trusted = {w: n for w, n in COUNTS.items() if n > TRUSTED}
    text = sep.join(w.capitalize() if n == 0 else w for n, w in enumerate(words) if w in trusted)
    assert respell(text, trusted) == text


@given(st.sampled_from(sorted(COUNTS)), st.integers(0, 2**32))
def test_a_typo_becomes_its_word_or_a_more_frequent_neighbour(word: str, seed: int) -> None:
    typed = with_typos(word, random.Random(seed), 1.0)
    read = respell(typed, COUNTS)
    if typed in COUNTS or typed == word:
        return  # a typo that makes a known word cannot be told from it
    if read != typed:  # changed: a known word one typo away, at least as frequent as `word`
        assert read in COUNTS and read in one_typo_away(typed)
        assert COUNTS[read] >= COUNTS[word] or word not in one_typo_away(typed)
    if word in one_typo_away(typed):
        assert read != typed  # the word itself qualifies, so something was chosen


@given(st.text(alphabet=st.sampled_from("wahtisn dro'!?,.ATW"), max_size=30))
def test_only_words_change_and_never_their_number(text: str) -> None:
    read = respell(text, COUNTS)
    assert WORD.sub("", read) == WORD.sub("", text)  # spaces, punctuation, digits as typed
    assert len(WORD.findall(read)) == len(WORD.findall(text))


def test_a_typed_sentence_reaches_the_engine_respelt_and_without_a_table_as_typed() -> None:
    words = ["What", "what", "is", "it", "?", "and", "the", "Tom", "tom", "waht", "annd"]
    tokenizer = train_tokenizer([" ".join(words)] * 3, min_freq=1, kind="word")
    typed = ["waht is it ?", "WAHT IS IT ?", "Tom annd the"]
    seen: list[list[int]] = []

    def decode(sources: list[list[int]], chars: list[int]) -> list[list[int]]:
        seen.extend(sources)
        return [s[1:-1] for s in sources]

    out = translate_texts(typed, tokenizer, tokenizer, 50, decode, recase=True, spelling=COUNTS)
    wanted = ["what is it ?", "What is it ?", "Tom and the"]  # capitals: read in sentence case
    assert seen == encode_sources(tokenizer, wanted, 50)
    assert out[1] == "WHAT IS IT ?"  # and written back in capitals
    seen.clear()
    translate_texts(typed, tokenizer, tokenizer, 50, decode, recase=False)
    assert seen == encode_sources(tokenizer, typed, 50)


def test_the_table_is_saved_and_a_damaged_one_is_one_line(tmp_path) -> None:
    assert load_spelling(tmp_path) is None  # a run made before spelling.json: no table
    save_spelling({"what": 3}, tmp_path / "spelling.json")
    assert load_spelling(tmp_path) == {"what": 3}
    (tmp_path / "spelling.json").write_text('{"what": "3"}')
    with pytest.raises(CheckpointError, match=r"spelling.json: not a spelling table.*delete it"):
        load_spelling(tmp_path)
