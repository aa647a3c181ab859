"""Encoder inputs from text, without torch: shared by the PyTorch and the CTranslate2 engines."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from tokenizers import Tokenizer

from translator.data.casing import all_capitals, all_lower, truecase
from translator.data.spelling import respell
from translator.data.tokenizer import decode_ids
from translator.specials import EOS_ID, SOS_ID

log = logging.getLogger("translator")
_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_sources(
    tokenizer: Tokenizer, sentences: list[str], max_tokens: int, first_line: int = 1
) -> list[list[int]]:
    """Encoder inputs [SOS] words [EOS]; a sentence over `max_tokens` words is cut, with a warning.

    Words the tokenizer does not know become [UNK].
    """
    # Undecodable bytes in command-line arguments arrive as lone surrogates; make them U+FFFD.
    sentences = [_SURROGATE.sub("\ufffd", s) for s in sentences]
    encoded = []
    for n, enc in enumerate(tokenizer.encode_batch(sentences)):
        ids = enc.ids
        if len(ids) > max_tokens:
            log.warning(
                "warning: line %d has %d words, more than the model's maximum of %d; "
                "only its first %d are translated",
                first_line + n,
                len(ids),
                max_tokens,
                max_tokens,
            )
            ids = ids[:max_tokens]
        encoded.append([SOS_ID, *ids, EOS_ID])
    return encoded


def translate_texts(
    sentences: list[str],
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    max_tokens: int,
    decode: Callable[[list[list[int]], list[int]], list[list[int]]],
    first_line: int = 1,
    recase: bool = False,
    casing: dict[str, str] | None = None,
    spelling: dict[str, int] | None = None,
) -> list[str]:
    """Text in, text out around an engine's `decode` (encoder inputs and each one's length in
    characters as typed -> output ids), in input order; an empty or blank sentence gives an empty
    string without reaching the engine.

    With `recase` (`decode.recase`), a sentence written all in capitals is translated as it
    would be written in sentence case, and its translation is written in capitals. With a
    `casing` table (`decode.truecase`), a sentence with no capital letter is translated with the
    table's capitals and a capital first letter, and so is a sentence in capitals. With `spelling`
    (word counts, `decode.respell`), a word typed with a typo is read as the data spells it."""
    translations = [""] * len(sentences)
    todo = [i for i, s in enumerate(sentences) if s.strip()]
    if not todo:
        return translations
    shouted = {i for i in todo if recase and all_capitals(sentences[i])}
    texts = [_as_read(s, i in shouted, casing, spelling) for i, s in enumerate(sentences)]
    encoded = encode_sources(src_tokenizer, texts, max_tokens, first_line)
    outputs = decode([encoded[i] for i in todo], [len(sentences[i]) for i in todo])
    for i, out in zip(todo, outputs, strict=True):
        text = decode_ids(tgt_tokenizer, out)
        translations[i] = text.upper() if i in shouted else text
    return translations


def _as_read(
    text: str, shouted: bool, casing: dict[str, str] | None, spelling: dict[str, int] | None
) -> str:
    """`text` as the model reads it: each word as the data spells it (with `spelling`); in
    capitals (`shouted`), in sentence case with the casing table's capitals; with no capital and
    a table, with the table's capitals; else as typed."""
    if shouted:
        text = text.lower()
    if spelling:
        text = respell(text, spelling)
    if shouted:
        return truecase(text, casing or {})
    return truecase(text, casing) if casing and all_lower(text) else text


def guard_size(source: list[int], n: int) -> int:
    """The repeat guard of one sentence (`decode.no_repeat_ngram` = `n`; 0: off): `n`, or one more
    than the longest sequence its source repeats, if that is longer. `ha ha ha ha` may come back
    as `ah ah ah ah`, and a source that says `chess players` twice may too, while a loop is still
    cut after a few turns."""
    if n < 2:
        return 0
    size = n
    while repeats_ngram(source, size):
        size += 1
    return size


def run_limit(source: list[int], r: int) -> int:
    """The longest run of one token an output of `source` may hold (`decode.max_run` = `r`; 0:
    off): `r`, or the source's own longest run if that is longer (`ha ha ha ha`)."""
    return max(r, longest_run(source)) if r >= 1 else 0


def longest_run(ids: list[int]) -> int:
    """The most times one id follows itself in a row in `ids`, plus one (0 for no ids)."""
    longest = run = 0
    for at, token in enumerate(ids):
        run = run + 1 if at and token == ids[at - 1] else 1
        longest = max(longest, run)
    return longest


def repeats_ngram(ids: list[int], n: int) -> bool:
    """Whether a sequence of `n` ids occurs twice in `ids` (overlaps count)."""
    if n < 2 or len(ids) <= n:
        return False
    seen = set()
    for start in range(len(ids) - n + 1):
        gram = tuple(ids[start : start + n])
        if gram in seen:
            return True
        seen.add(gram)
    return False
