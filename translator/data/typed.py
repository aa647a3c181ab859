"""Text as people type it (`data.noise`): a share of the training pairs presented in another form.

A corpus of subtitles or books is sentence-cased and punctuated throughout, so a model trained on
it has never seen `THE MEETING IS CANCELLED` or `where is the nearest pharmacy` and translates
them badly (or loops). Each training pair is given one form, drawn with the seed when the data is
prepared (OpusTrainer's modifiers, as Firefox Translations trains with, do the same on the fly):

  upper   all capitals, both sides (an acronym or a shouted word comes back in capitals)
  lower   lower case without the final punctuation: the source only
  title   Each Word Capitalised: the source only
  typos   a typo in a share of the source's words (`data.typo_words`): two letters swapped, one
          dropped or one doubled: the source only

Where only the source changes, the target stays as written, so the model learns to give a
well-written translation of a carelessly typed sentence. (With `lower` on both sides, as first
built, the model learned to drop the final punctuation too: 63% of the clean BLEU on the dev set
typed so, against 77% with no typed forms at all; docs/experiments.md.)

The validation pairs stay as written. The tokenizers are trained on the pairs as presented, so
they learn pieces for the forms the model will see.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator

import numpy as np

from translator.config.data import NOISE_FORMS
from translator.data.read import Pair

FORMS_VERSION = 3
"""Part of a prepared store's key when `data.noise` is on: raised whenever a form changes what it
does (2: `lower` and `title` change the source only; 3: the name-swapped and joined pairs take
forms too), so no store of the old forms is reused."""
FORMS = NOISE_FORMS
"""A pair's form is 1 + its index here (0: as written)."""
_CHUNK = 1 << 20
_FINAL = re.compile(r"[\s.!?…;:]+$")
_WORD = re.compile(r"[^\W\d_]{2,}")


def choose_forms(train: np.ndarray, shares: dict[str, float], seed: int) -> np.ndarray:
    """One form per pair (uint8; 0 = as written), for the training pairs `train` marks: each
    form takes its share of them, drawn with `seed`."""
    forms = np.zeros(len(train), dtype=np.uint8)
    rng = np.random.default_rng([seed, 4])
    for start in range(0, len(train), _CHUNK):  # a chunk of draws at a time: memory stays flat
        draw = rng.random(min(_CHUNK, len(train) - start))
        part = forms[start : start + len(draw)]
        edge = 0.0
        for code, name in enumerate(FORMS, start=1):
            share = shares.get(name, 0.0)
            part[(draw >= edge) & (draw < edge + share)] = code
            edge += share
        part[~train[start : start + len(draw)]] = 0
    return forms


def form_counts(forms: np.ndarray) -> dict[str, int]:
    """How many pairs took each form."""
    counts = np.bincount(forms, minlength=len(FORMS) + 1)
    return {name: int(counts[code]) for code, name in enumerate(FORMS, start=1)}


def present(
    pairs: Iterable[Pair], forms: np.ndarray, seed: int, typo_words: float
) -> Iterator[Pair]:
    """`pairs` (all the kept pairs, in order) each in its form. The same pairs, forms and seed
    give the same text every time: the tokenizers and the encoder read one stream twice."""
    rng = random.Random(seed)
    codes = (int(c) for at in range(0, len(forms), _CHUNK) for c in forms[at : at + _CHUNK])
    for pair, code in zip(pairs, codes, strict=False):
        yield in_form(pair, code, rng, typo_words)


def present_drawn(
    pairs: Iterable[Pair], shares: dict[str, float], seed: str, typo_words: float,
    counts: dict[str, int],
) -> Iterator[Pair]:  # fmt: skip
    """Extra pairs (name-swapped, joined), made while the store is written, each in a form drawn
    as it comes with `seed`: each form takes its share of them, as of the corpus's own pairs.
    `counts` (form -> pairs) adds up what each took. A name-swapped pair is where the model
    learns that `tom` is Tom: as written only, a lower-case name came out as a word (`la tomba`)."""
    draw, rng = random.Random(f"{seed} forms"), random.Random(f"{seed} typos")
    edges, edge = [], 0.0
    for name in FORMS:
        edge += shares.get(name, 0.0)
        edges.append(edge)
    for pair in pairs:
        u = draw.random()
        code = next((n for n, edge in enumerate(edges, start=1) if u < edge), 0)
        if code:
            counts[FORMS[code - 1]] = counts.get(FORMS[code - 1], 0) + 1
        yield in_form(pair, code, rng, typo_words)


def in_form(pair: Pair, code: int, rng: random.Random, typo_words: float) -> Pair:
    """`pair` in form `code` (0: as written; else 1 + its index in `FORMS`)."""
    src, tgt = pair
    if code == 0:
        return pair
    if code == 1:
        return src.upper(), tgt.upper()
    if code == 2:
        return unpunctuated(src.lower()), tgt
    if code == 3:
        return title_case(src), tgt
    return with_typos(src, rng, typo_words), tgt


def unpunctuated(text: str) -> str:
    """`text` without the punctuation that ends it (`Where is it?` -> `Where is it`)."""
    return _FINAL.sub("", text) or text


def title_case(text: str) -> str:
    """Each space-separated word with its first letter capitalised, the rest as written
    (`str.title` would write `Dov'È`)."""
    return " ".join(word[:1].upper() + word[1:] for word in text.split(" "))


def with_typos(text: str, rng: random.Random, share: float) -> str:
    """`text` with a typo in each word of two or more letters with probability `share`: two
    neighbouring letters swapped, a letter dropped, or a letter doubled."""

    def typo(match: re.Match[str]) -> str:
        word = match.group()
        if rng.random() >= share:
            return word
        kind, at = rng.randrange(3), rng.randrange(len(word) - 1)
        if kind == 0:
            return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        if kind == 1 and len(word) > 2:
            return word[:at] + word[at + 1 :]
        return word[: at + 1] + word[at] + word[at + 1 :]

    return _WORD.sub(typo, text)
