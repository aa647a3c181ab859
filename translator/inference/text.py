"""Encoder inputs from text, without torch: shared by the PyTorch and the CTranslate2 engines."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from tokenizers import Encoding, Tokenizer

from translator.data.casing import all_capitals, all_lower, truecase
from translator.data.spelling import respell
from translator.data.tokenizer import decode_ids
from translator.inference.segment import Layout, cut_long, layout
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
    return [
        _encode_one(enc, max_tokens, first_line + n)
        for n, enc in enumerate(tokenizer.encode_batch(sentences))
    ]


def _encode_one(enc: Encoding, max_tokens: int, line: int) -> list[int]:
    ids = enc.ids
    if len(ids) > max_tokens:
        log.warning(
            "warning: line %d has %d words, more than the model's maximum of %d; "
            "only its first %d are translated",
            line,
            len(ids),
            max_tokens,
            max_tokens,
        )
        ids = ids[:max_tokens]
    return [SOS_ID, *ids, EOS_ID]


def translate_texts(
    texts: list[str],
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    max_tokens: int,
    decode: Callable[[list[list[int]], list[int]], list[list[int]]],
    first_line: int | list[int] = 1,
    recase: bool = False,
    casing: dict[str, str] | None = None,
    spelling: dict[str, int] | None = None,
    split: bool = True,
) -> list[str]:
    """Text in, text out around an engine's `decode` (encoder inputs and each one's length in
    characters as typed -> output ids), in input order, one text out per text in. Warnings
    name the line of text `n` as `first_line + n`, or `first_line[n]` when it is a list.

    Each text (a line, or lines) is cut into its sentences (`split`, `decode.split_sentences`;
    else each line is one piece) and put back as it was laid out: indentation, list markers,
    the spaces between sentences, line breaks (inference/segment.py). Every sentence of every
    text is decoded in one call. A sentence over `max_tokens` tokens is cut at clause
    punctuation into pieces that fit, with a line on stderr. A blank text gives an empty string.

    With `recase` (`decode.recase`), a sentence written all in capitals is translated as it
    would be written in sentence case, and its translation is written in capitals. With a
    `casing` table (`decode.truecase`), a sentence with no capital letter is translated with the
    table's capitals and a capital first letter, and so is a sentence in capitals. With `spelling`
    (word counts, `decode.respell`), a word typed with a typo is read as the data spells it."""
    texts = [_SURROGATE.sub("\ufffd", t) for t in texts]
    layouts = [layout(t, split) if t.strip() else Layout([], [""]) for t in texts]
    pieces: list[str] = []
    lines: list[int] = []
    numbers = (
        first_line if isinstance(first_line, list) else range(first_line, first_line + len(texts))
    )
    for lay, line in zip(layouts, numbers, strict=True):
        for at, piece in reversed(list(enumerate(lay.pieces))):  # inserting keeps earlier `at`
            cut = _cut_if_long(piece, src_tokenizer, max_tokens, line)
            if len(cut) > 1:
                lay.pieces[at : at + 1] = cut  # the pieces of one sentence, a space apart
                lay.gaps[at + 1 : at + 1] = [" "] * (len(cut) - 1)
        pieces += lay.pieces
        lines += [line] * len(lay.pieces)
    translated = iter(
        _translate_pieces(
            pieces,
            lines,
            src_tokenizer,
            tgt_tokenizer,
            max_tokens,
            decode,
            recase,
            casing,
            spelling,
        )
    )
    return [
        lay.assemble([next(translated) for _ in lay.pieces]) if lay.pieces else ""
        for lay in layouts
    ]


def _translate_pieces(
    pieces: list[str],
    lines: list[int],
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    max_tokens: int,
    decode: Callable[[list[list[int]], list[int]], list[list[int]]],
    recase: bool,
    casing: dict[str, str] | None,
    spelling: dict[str, int] | None,
) -> list[str]:
    """The translation of each piece (a sentence or part of one), decoded in one call."""
    if not pieces:
        return []
    shouted = [recase and all_capitals(p) for p in pieces]
    read = [_as_read(p, s, casing, spelling) for p, s in zip(pieces, shouted, strict=True)]
    encoded = [
        _encode_one(enc, max_tokens, line)
        for enc, line in zip(src_tokenizer.encode_batch(read), lines, strict=True)
    ]
    outputs = decode(encoded, [len(p) for p in pieces])
    texts = [decode_ids(tgt_tokenizer, out) for out in outputs]
    return [t.upper() if s else t for t, s in zip(texts, shouted, strict=True)]


def _cut_if_long(piece: str, tokenizer: Tokenizer, max_tokens: int, line: int) -> list[str]:
    """`piece` whole when the model takes it, else cut at clauses (a line on stderr)."""
    if len(piece.encode()) <= max_tokens or len(tokenizer.encode(piece).ids) <= max_tokens:
        return [piece]  # a token holds at least one byte (a byte-level piece: one, not a char)
    cut = cut_long(
        piece, lambda words: [len(e.ids) for e in tokenizer.encode_batch(words)], max_tokens
    )
    log.warning(
        "line %d: a sentence of %d words is longer than the model takes (%d tokens); "
        "translated in %d pieces cut at its clauses",
        line,
        len(piece.split()),
        max_tokens,
        len(cut),
    )
    return cut


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
