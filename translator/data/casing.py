"""The usual case of each word, for text typed without capitals (`decode.truecase`).

A subtitle or book corpus writes `Tom`, `I` and `French` with capitals, so a model trained on it
reads `tom` as a rare word: `is tom also coming` came out as `La tomba sta arrivando`. When the
data is prepared, the source side of the tokenizers' sample is counted: each word written where
no sentence starts, in each of its forms. A word written with capitals more than twice as often
as without goes in the table (`tom` -> `Tom`, `i` -> `I`, `tv` -> `TV`); one often written in
lower case (`will`, `bill`) does not. The table is saved beside the tokenizers (casing.json,
in the store, the run directory and an export); a sentence with no capital letter is given the
table's capitals and a capital first letter before it is translated, and so is one in all
capitals (`decode.recase`) before its translation is written in capitals again.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from translator.jsonfile import load_word_table, save_word_table

CASING_FILE = "casing.json"
SENTENCE_ENDS = ".!?:\"'-"
"""A word after one of these (or first in its text) may be capitalised for the sentence's sake."""
_WORD = re.compile(r"[^\W\d_]+")
MIN_SEEN = 2
"""A word seen once with capitals (a title, a heading) stays as typed."""


def learn_casing(texts: Iterable[str]) -> dict[str, str]:
    """Lower-case word -> its usual form, for the words `texts` write with capitals more than
    twice as often as without, where no sentence starts."""
    lower: Counter[str] = Counter()
    cased: dict[str, Counter[str]] = {}
    for text in texts:
        if not any(c.islower() for c in text):  # a line in capitals says nothing of each word
            continue
        for match in _WORD.finditer(text):
            word = match.group()
            if word.islower():
                lower[word] += 1
                continue
            before = text[: match.start()].rstrip()
            if before and before[-1] not in SENTENCE_ENDS:
                cased.setdefault(word.lower(), Counter())[word] += 1
    table = {}
    for key, forms in cased.items():
        form, n = forms.most_common(1)[0]
        if n >= MIN_SEEN and n > 2 * lower[key]:
            table[key] = form
    return dict(sorted(table.items()))


def truecase(text: str, table: dict[str, str]) -> str:
    """`text` (in lower case) with each word in its usual form and its first letter capitalised:
    `is tom also coming` -> `Is Tom also coming`."""
    cased = _WORD.sub(lambda m: table.get(m.group(), m.group()), text)
    first = next((n for n, c in enumerate(cased) if c.isalnum()), None)
    if first is None or not cased[first].isalpha():  # `3 apples` stays so
        return cased
    return cased[:first] + cased[first].upper() + cased[first + 1 :]


def _cased_letters(text: str) -> list[str]:
    return [c for c in text if c.isupper() or c.islower()]


def all_capitals(text: str) -> bool:
    """Whether `text` has two letters or more and all in capitals (`THE MEETING IS CANCELLED.`)."""
    cased = _cased_letters(text)
    return len(cased) >= 2 and all(c.isupper() for c in cased)


def all_lower(text: str) -> bool:
    """Whether `text` has two letters or more and no capital (`is tom also coming`)."""
    cased = _cased_letters(text)
    return len(cased) >= 2 and not any(c.isupper() for c in cased)


def save_casing(table: dict[str, str], path: Path) -> None:
    save_word_table(table, path)


def load_casing(directory: Path) -> dict[str, str] | None:
    """The table saved in `directory`, or None where there is none (made before it existed)."""
    return load_word_table(directory / CASING_FILE, "casing table", lambda v: isinstance(v, str))
