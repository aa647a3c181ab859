"""Text as people paste it, cut into what the model learnt from: one sentence at a time.

A text (a line, or a pasted paragraph with its line breaks) becomes its pieces to translate and
the text between them (`Layout`): each line's indentation and list marker, the spaces between its
sentences, its line breaks. Translations put back into the layout give one text out per text in,
spaced as it came. A sentence longer than the model takes is cut at clause punctuation (`,` `;`
`:` and dashes), then between words, into pieces it can take. No torch here: both engines use it.

Sentences are found by sentencex (Wikimedia's splitter, chosen on the dev set over pysbd, nupunkt,
the Moses splitter and syntok: scripts/bench_split.py), with two rules of ours on top: a title
(`Dr.`, `Mr.`, `Mt.`) never ends a sentence, and the words `me.` and `no.` before a capital do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sentencex

# Indentation, then a list marker: a bullet, `1.`, `2)`, `a)`, or a dialogue dash. Kept as typed.
_MARKER = re.compile(r"[ \t]*(?:(?:[-*•‣◦–—]|\d{1,3}[.)]|[a-zA-Z]\))[ \t]+)?")
# Titles that come before a name and so never end a sentence (sentencex cuts `Dr. Who`).
_TITLES = re.compile(
    r"(?:^|\s)(?:Mr|Mrs|Ms|Dr|Prof|St|Mt|Sen|Rep|Gen|Gov|Capt|Lt|Col|Sgt|Rev|Fr|Hon)\.$"
)
# `me.` and `no.` before a capital end a sentence (sentencex reads them as abbreviations: 16
# of the 18 joins of dev sentences it missed); `No. 5` stays whole.
_WORD_END = re.compile(r"\b(?:me|no)\.(?=\s+[\"“‘'(]?[A-Z])")
# Line breaks other than `\n`: inside a line they are spaces.
_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Where a long sentence may be cut: after clause punctuation, or before a dash between words.
_CLAUSE_END = re.compile(r"(?<=[,;:])\s+|\s+(?=[-–—]\s)")


@dataclass
class Layout:
    """A text as `gaps[0] + pieces[0] + gaps[1] + ... + pieces[-1] + gaps[-1]`."""

    pieces: list[str]
    gaps: list[str]

    def assemble(self, translations: list[str]) -> str:
        """The layout with each piece replaced by its translation."""
        out = [self.gaps[0]]
        for translation, gap in zip(translations, self.gaps[1:], strict=True):
            out += [translation, gap]
        return "".join(out)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, its spaces excluded, in order."""
    spans: list[tuple[int, int]] = []
    for bound in sentencex.get_sentence_boundaries("en", text):
        start, end = bound["start_index"], bound["end_index"]
        chunk = text[start:end]
        if not chunk.strip():
            continue
        start += len(chunk) - len(chunk.lstrip())
        end -= len(chunk) - len(chunk.rstrip())
        if spans and _TITLES.search(text[spans[-1][0] : spans[-1][1]]):
            start = spans.pop()[0]
        for cut in _WORD_END.finditer(text, start, end):
            spans.append((start, cut.end()))
            start = cut.end() + len(text[cut.end() : end]) - len(text[cut.end() : end].lstrip())
        spans.append((start, end))
    return spans


def layout(text: str, split: bool = True) -> Layout:
    """`text` cut into pieces to translate: each line's sentences (`split`) or each line whole,
    without its indentation and list marker. Lines end at `\n` (`\r\n` kept as it is); the
    spaces between sentences are kept, any other line break among them (`\r`, U+2028) becomes a
    space, and spaces at the end of a line are dropped: a line gives one line."""
    pieces: list[str] = []
    gaps = [""]
    lines = text.split("\n")
    for n, line in enumerate(lines):
        ending = "" if n == len(lines) - 1 else "\r\n" if line.endswith("\r") else "\n"
        body = _BREAKS.sub(" ", line).rstrip()
        at = _MARKER.match(body).end() if body else 0
        spans = split_sentences(body[at:]) if split else [(0, len(body) - at)] if body else []
        gaps[-1] += body[: at + spans[0][0]] if spans else ""
        for k, (start, end) in enumerate(spans):
            if k:
                gaps.append(body[at + spans[k - 1][1] : at + start])
            pieces.append(body[at + start : at + end])
        if spans:
            gaps.append("")
        gaps[-1] += ending
    return Layout(pieces, gaps)


def cut_long(sentence: str, count: Callable[[list[str]], list[int]], limit: int) -> list[str]:
    """`sentence` in pieces of at most `limit` tokens: whole clauses where they fit, else runs of
    words; `count` gives each word's token count (words are tokenized one by one, so counts
    add up). A single word over the limit stays one piece (it is truncated when encoded)."""
    clauses = [c for c in _CLAUSE_END.split(sentence) if c]
    words = [clause.split() for clause in clauses]
    sizes = count([w for clause in words for w in clause])
    pieces: list[list[str]] = []
    size = 0
    at = 0
    for clause in words:
        clause_sizes = sizes[at : at + len(clause)]
        at += len(clause)
        if pieces and size + sum(clause_sizes) <= limit:
            pieces[-1] += clause
            size += sum(clause_sizes)
            continue
        pieces.append([])
        size = 0
        for word, n in zip(clause, clause_sizes, strict=True):
            if pieces[-1] and size + n > limit:
                pieces.append([])
                size = 0
            pieces[-1].append(word)
            size += n
    return [" ".join(piece) for piece in pieces]
