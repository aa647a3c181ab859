"""Words as the training data spells them, for text typed with typos (`decode.respell`).

A typo makes a word the model has never read (`waht`, `annd`, `stuupidity`): its subword pieces
are other pieces, and a small model trained on a few typed pairs translates a quarter of such
words badly. When the data is prepared, the source side of the tokenizers' sample is counted,
word by word in lower case (spelling.json, beside the tokenizers in the store, the run directory
and an export). Before a sentence is translated, each word is read as the word one typo away that
the data wrote at least `RATIO` times as often (a word never seen: seen at all), the most frequent
such word where there are several. One typo is a typo as people make them: two neighbouring
letters swapped (`waht`), a letter doubled (`annd`) or one dropped (`wat`; an apostrophe too,
`dont`, where the data writes the word with it more than `TRUSTED` times). A word the data wrote
more than `TRUSTED` times is never changed (`form` is not `from`), nor is one typed in capitals
inside a sentence that is not (`EU`, `ER`), one of one letter, or one over `LONGEST` letters.

Measured on the dev set typed with a typo in a quarter of its words (scripts/bench_robust.py's
transform; counts from `cpu.yaml`'s data, opensubs.jsonl): 2,492 of the 2,768 misspelt words
(90%) read as the dev set writes them, and 21 of its 11,622 words as written changed (`hat` ->
`that`, `itch` -> `bitch`, `Linda` -> `Glinda`: rare words one typo from a frequent one).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from translator.data.casing import all_capitals
from translator.jsonfile import load_word_table, save_word_table

SPELLING_FILE = "spelling.json"
RATIO = 100
"""A word seen is read as another only if that one was seen at least this many times as often."""
TRUSTED = 30
"""A word seen more than this many times is read as typed."""
LONGEST = 24
"""A longer word is read as typed (its neighbours grow with the square of its length)."""
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
"""A word: letters, with the apostrophes inside it (`don't` is one word, `dno't` one typo away)."""


def learn_spelling(texts: Iterable[str]) -> dict[str, int]:
    """Lower-case word -> how many times `texts` write it."""
    counts: Counter[str] = Counter()
    for _ in counting_words(counts, texts):
        pass
    return dict(sorted(counts.items()))


def counting_words(counts: Counter[str], texts: Iterable[str]) -> Iterator[str]:
    """`texts` passed on, their words counted into `counts` on the way: one read of the sample
    feeds both the casing table and the spelling table."""
    for text in texts:
        counts.update(word.lower() for word in WORD.findall(text))
        yield text


def respell(text: str, counts: dict[str, int]) -> str:
    """`text` with each word read as the data spells it (see the module's docstring); the case
    of each changed word as typed (`Waht` -> `What`)."""
    capitals = all_capitals(text)
    return WORD.sub(lambda m: _respelt(m.group(), counts, capitals), text)


def _respelt(word: str, counts: dict[str, int], capitals: bool) -> str:
    key = word.lower()
    seen = counts.get(key, 0)
    if not 2 <= len(key) <= LONGEST or seen > TRUSTED or (word.isupper() and not capitals):
        return word
    need = RATIO * seen if seen else 1
    best, most = key, 0
    for candidate in sorted(one_typo_away(key)):  # sorted: a tie goes the same way every time
        n = counts.get(candidate, 0)
        if "'" in candidate and "'" not in key and n <= TRUSTED:
            continue  # `bishops` is no typo of `bishop's`; `dont` is one of `don't`
        if n >= need and n > most:
            best, most = candidate, n
    if best == key:
        return word
    if word.isupper():
        return best.upper()
    return best[0].upper() + best[1:] if word[0].isupper() else best


def one_typo_away(word: str) -> set[str]:
    """The words `word` may be a typo of: with two neighbouring letters swapped back, a doubled
    letter made single, or a letter put back (an apostrophe too, inside: `dont`, `im`)."""
    found = set()
    letters = {c for c in word if c.isalpha()} | set("abcdefghijklmnopqrstuvwxyz")
    for at in range(len(word) + 1):
        head, tail = word[:at], word[at:]
        if tail and (head[-1:] == tail[0] or tail[1:2] == tail[0]):
            found.add(head + tail[1:])
        if len(tail) > 1:
            found.add(head + tail[1] + tail[0] + tail[2:])
        if head and tail:
            found.add(head + "'" + tail)
        found.update(head + c + tail for c in letters)
    found.discard(word)
    return found


def save_spelling(counts: dict[str, int], path: Path) -> None:
    save_word_table(counts, path)


def load_spelling(directory: Path) -> dict[str, int] | None:
    """The counts saved in `directory`, or None where there are none (made before they existed)."""
    return load_word_table(
        directory / SPELLING_FILE,
        "spelling table",
        lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    )
