"""Extra training pairs made from the corpus itself: name swapping and joined pairs.

Name swapping teaches the model to copy names it rarely sees.

A subtitle corpus names its own characters (Danny, Emily, ...) hundreds of times, while most other
names occur once or never, so the model learns to copy a few names and to guess at the rest. For
each training pair that copies a name from source to target, `swap_names` writes `copies` more
pairs with that name replaced, on both sides, by a name drawn uniformly from all the names the
corpus copies. Names are found in the data, not in a list: a capitalised word that appears
unchanged on both sides, is capitalised mid-sentence on the source side, and is rarely written
in lower case there.

Joined pairs (`join_pairs`, after Kondo et al. 2021 and Nguyen et al. 2021): a share of the
training pairs, each joined with the pair that follows it, source to source and target to target.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from translator.data.casing import SENTENCE_ENDS
from translator.data.read import Pair

_WORD = re.compile(r"[^\W\d_]+")
_NAME = re.compile(r"[^\W\d_][^\W\d_]+")


def _is_capitalised(word: str) -> bool:
    return word[0].isupper() and word[1:].islower()


def name_inventory(pairs: Iterable[Pair]) -> list[str]:
    """Words used as names on the source side, in order of first appearance.

    A name is capitalised (`Tom`, not `TOM` or `tom`), written so at least once where no sentence
    starts (so `Well` in `Well, ...` does not count), written in lower case less than half as
    often as it is capitalised mid-sentence (so not `Bill` beside `bill`), and copied unchanged to
    the target side at least once.
    """
    mid: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    copied: set[str] = set()
    order: dict[str, None] = {}
    for src, tgt in pairs:
        tgt_words = set(_WORD.findall(tgt))
        for match in _WORD.finditer(src):
            word = match.group()
            if word.islower():
                lower[word] += 1
            elif _is_capitalised(word) and len(word) > 1:
                order.setdefault(word)
                before = src[: match.start()].rstrip()
                if before and before[-1] not in SENTENCE_ENDS:
                    mid[word] += 1
                if word in tgt_words:
                    copied.add(word)
    return [w for w in order if w in copied and mid[w] > 0 and 2 * lower[w.lower()] < mid[w]]


def swap_names(pairs: Sequence[Pair], copies: int, seed: int) -> list[Pair]:
    """`copies` new pairs for each pair that copies a known name, the names swapped at random.

    Every copied name in a pair gets its own replacement, the same one on both sides, matched as
    a whole word. Deterministic for a given seed and input.
    """
    return list(iter_swapped(pairs, copies, seed))


def iter_swapped(
    pairs: Iterable[Pair], copies: int, seed: int, names_from: Iterable[Pair] | None = None
) -> Iterator[Pair]:
    """The pairs of `swap_names`, one at a time, the names found in `names_from` (default: all
    of `pairs`, which is then read twice, so it may be a re-readable stream from disk)."""
    if copies <= 0:
        return
    names = name_inventory(pairs if names_from is None else names_from)
    if len(names) < 2:
        return
    known = frozenset(names)
    # Only words that start with a name's first letter are looked up (most words are skipped in
    # the regex engine): the same words as _NAME finds, fewer of them.
    initials = re.escape("".join(sorted({name[0] for name in names})))
    candidates = re.compile(rf"(?<![^\W\d_])[{initials}][^\W\d_]+")
    rng = np.random.default_rng(seed)
    for src, tgt in pairs:
        in_src = known.intersection(candidates.findall(src))
        if not in_src:
            continue
        found = sorted(in_src.intersection(_WORD.findall(tgt)))
        for _ in range(copies if found else 0):
            new = {w: names[int(rng.integers(len(names)))] for w in found}
            yield _replace(new, src), _replace(new, tgt)


_WHOLE_WORD = re.compile(r"\w+")


def _replace(new: dict[str, str], text: str) -> str:
    """`text` with each whole word (a maximal run of \\w) that `new` maps replaced."""
    return _WHOLE_WORD.sub(lambda m: new.get(m.group(), m.group()), text)


def iter_joined(pairs: Iterable[Pair], share: float, seed: int) -> Iterator[Pair]:
    """For a seeded random `share` of `pairs`, the pair joined with the one after it (a space
    between, on both sides). The last pair has none after it. Deterministic for a given seed."""
    if share <= 0:
        return
    rng = np.random.default_rng([seed, 2])
    previous: Pair | None = None
    for pair in pairs:
        if previous is not None and rng.random() < share:
            yield f"{previous[0]} {pair[0]}", f"{previous[1]} {pair[1]}"
        previous = pair
