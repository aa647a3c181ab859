"""Cutting pasted text into sentences (inference/segment.py): sentences put on one line come apart
at their true boundaries and nowhere else, the layout around them comes back as it was, and a
sentence too long for the model is cut into pieces that fit, at its clauses first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from translator.inference.segment import cut_long, layout, split_sentences

# Everyday sentences, several holding what a naive splitter cuts at: titles and abbreviations,
# decimals, quotes, ellipses, initials.
SENTENCES = [
    "I'm not at all busy.",
    "The castle is made of glass.",
    "Come on, let's do this again.",
    "Where is the station?",
    "Careful!",
    "Mr. Brown met Mrs. Smith at 5 p.m. on Monday.",
    "It costs $3.50 today.",
    "Version 2.0 is out.",
    "I was... tired.",
    "Wait... what did you say?",
    'He said "Go now."',
    '"Where are you?"',
    "Visit e.g. Rome, i.e. the capital.",
    "The U.S. Army is big.",
    "See St. Peter's Square.",
    "I met J. K. Rowling yesterday.",
    "It's 3.14159 exactly.",
    "Mt. Fuji is high.",
    "I saw Dr. Who today.",
    "Ask Dr. Smith about it.",
    "Tom isn't drinking vodka.",
    "He's drinking wine.",
    "I bought apples, pears and plums.",
    "Why?",
    "No. 5 is mine.",
    "Call me at 10 a.m. tomorrow.",
    "Città e paesi, perché no?",
    "She paid 1,200 euros for it.",
]
GAPS = st.sampled_from([" ", "  ", "\t", " \t "])


@given(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=8), st.data())
def test_sentences_on_one_line_come_apart_at_their_true_boundaries(
    sentences: list[str], data: st.DataObject
) -> None:
    gaps = [data.draw(GAPS) for _ in sentences[1:]]
    text = sentences[0] + "".join(g + s for g, s in zip(gaps, sentences[1:], strict=True))
    lay = layout(text)
    assert lay.pieces == sentences
    assert lay.gaps == ["", *gaps, ""]  # the spacing between them, as typed
    assert lay.assemble(lay.pieces) == text


@given(st.sampled_from(SENTENCES))
def test_one_sentence_stays_whole(sentence: str) -> None:
    assert [sentence[a:b] for a, b in split_sentences(sentence)] == [sentence]
    assert layout(sentence, split=False).pieces == [sentence]


MARKERS = st.sampled_from(["", "  ", "\t", "- ", "* ", "• ", "1. ", "12) ", "b) ", "    - "])


@given(
    st.lists(
        st.one_of(
            st.just(""), st.tuples(MARKERS, st.lists(st.sampled_from(SENTENCES), min_size=1))
        ),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_the_layout_comes_back_as_it_was(lines: list, crlf: bool) -> None:
    """Blank lines, indentation and list markers stay; each sentence is a piece."""
    typed = ["" if line == "" else line[0] + " ".join(line[1]) for line in lines]
    text = ("\r\n" if crlf else "\n").join(typed)
    lay = layout(text)
    assert lay.pieces == [s for line in lines if line != "" for s in line[1]]
    assert lay.assemble(lay.pieces) == text
    marked = lay.assemble([f"<{n}>" for n in range(len(lay.pieces))])
    for line, out in zip(lines, marked.split("\r\n" if crlf else "\n"), strict=True):
        assert out == "" if line == "" else out.startswith(line[0] + "<")


def test_a_line_holds_no_break_but_its_own() -> None:
    """Other line breaks inside a line are spaces; spaces closing a line go."""
    lay = layout("One.\u2028Two.\rThree.   \nFour.  ")
    assert lay.pieces == ["One.", "Two.", "Three.", "Four."]
    assert lay.assemble(lay.pieces) == "One. Two. Three.\nFour."
    assert layout("   ").pieces == [] and layout("").pieces == []


def words_count(words: list[str]) -> list[int]:
    """A tokenizer whose words take one token per 3 characters."""
    return [(len(w) + 2) // 3 for w in words]


@given(
    st.lists(
        st.tuples(
            st.lists(st.text("abcdefghij", min_size=1, max_size=12), min_size=1, max_size=15),
            st.sampled_from([",", ";", ":", ""]),
        ),
        min_size=1,
        max_size=12,
    ),
    st.integers(5, 40),
)
def test_a_long_sentence_is_cut_into_pieces_that_fit(clauses: list, limit: int) -> None:
    sentence = " ".join(" ".join(words) + mark for words, mark in clauses)
    pieces = cut_long(sentence, words_count, limit)
    assert " ".join(pieces).split() == sentence.split()  # nothing lost, nothing added
    for piece in pieces:
        assert sum(words_count(piece.split())) <= limit or len(piece.split()) == 1


def test_cuts_fall_at_clause_punctuation_where_the_clauses_fit() -> None:
    sentence = "one two three, four five six; seven eight nine: ten eleven twelve"
    pieces = cut_long(sentence, lambda words: [1] * len(words), 7)
    assert pieces == ["one two three, four five six;", "seven eight nine: ten eleven twelve"]
    pieces = cut_long("alpha beta gamma delta epsilon", lambda words: [1] * len(words), 2)
    assert pieces == ["alpha beta", "gamma delta", "epsilon"]  # no clause: between words
