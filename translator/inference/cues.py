"""Subtitle files (SubRip `.srt`, WebVTT `.vtt`): cues read, their text translated, the file written
back with every cue number, timing line, note and blank line byte for byte.

A sentence often runs across cues (`I told him that` | `he should leave.`): consecutive cues are
joined until one ends a sentence, the joined text is cut into sentences, each sentence is
translated whole, and its translation is spread back over the cues it came from by their share
of its characters, at word boundaries. A cue of several lines gets as many lines back (balanced);
a dialogue line (`- Hi.`) stays a line of its own. Tags (`<i>`, `{\\an8}`) around a cue's text are
kept around its translation; tags inside it are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from translator.errors import ConfigError
from translator.inference.segment import split_sentences

Translate = Callable[[list[str], list[int]], list[str]]
"""Texts and the file line of each -> their translations."""

_SRT_TIMING = re.compile(r"\d+:\d{1,2}:\d{1,2}[,.]\d{1,3}\s*-->\s*\d+:\d{1,2}:\d{1,2}[,.]\d{1,3}")
_VTT_TIMING = re.compile(r"(?:\d+:)?\d{2}:\d{2}\.\d{3}\s+-->\s+(?:\d+:)?\d{2}:\d{2}\.\d{3}")
_TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")
_EDGE_TAGS = re.compile(r"^((?:\s*(?:<[^>/][^>]*>|\{\\[^}]*\}))*)(.*?)((?:</[^>]*>\s*)*)$", re.S)
_DIALOGUE = re.compile(r"\s*[-–—]\s")
_ENDS_SENTENCE = re.compile(r"[.!?…♪]['\"”’)\]]*$")
MAX_RUN = 8  # cues joined into one stretch of text at most


@dataclass
class Cue:
    """One block of the file: `head` lines kept as they are, `text` lines to translate (each
    with its line ending), the number of the file line where the text starts."""

    head: list[str]
    text: list[str]
    line: int
    number: str
    out: list[str] = field(default_factory=list)


def read_blocks(lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """Blocks of lines (with endings) between blank lines, each with its first line's number;
    the blank lines come as blocks of their own."""
    block: list[str] = []
    start = 1
    for n, line in enumerate(lines, start=1):
        blank = not line.strip()
        if block and blank != (not block[0].strip()):
            yield block, start
            block = []
        if not block:
            start = n
        block.append(line)
    if block:
        yield block, start


def parse_cues(lines: Iterable[str], fmt: str, name: str) -> Iterator[Cue]:
    """The blocks of a subtitle file as cues; blank lines, the WebVTT header, notes, styles and
    regions as cues with no text. A malformed cue is a one-line ConfigError naming it."""
    previous = "0"
    for n, (block, start) in enumerate(read_blocks(lines)):
        if not block[0].strip():
            yield Cue(block, [], start, "")
            continue
        first = block[0].strip()
        if fmt == "vtt" and (n == 0 or first.split(maxsplit=1)[0] in ("NOTE", "STYLE", "REGION")):
            if n == 0 and not first.lstrip("\ufeff").startswith("WEBVTT"):
                raise ConfigError(
                    f"{name}, line 1: a WebVTT file starts with WEBVTT, found {first[:40]!r}; "
                    "give --format srt or --format text if it is another kind of file"
                )
            yield Cue(block, [], start, "")
            continue
        yield _cue(block, start, fmt, name, previous)
        previous = _cue_number(block, fmt, previous)


def _cue_number(block: list[str], fmt: str, previous: str) -> str:
    first = block[0].strip().lstrip("\ufeff")
    if fmt == "srt" and first.isdigit():
        return first
    return str(int(previous) + 1) if previous.isdigit() else previous


def _cue(block: list[str], start: int, fmt: str, name: str, previous: str) -> Cue:
    number = _cue_number(block, fmt, previous)
    timing = _SRT_TIMING if fmt == "srt" else _VTT_TIMING
    first = block[0].strip().lstrip("\ufeff")
    if fmt == "srt":
        if not first.isdigit():
            raise ConfigError(
                f"{name}, line {start}: cue {number} should start with its number, found "
                f"{first[:40]!r}; fix the cue (SubRip: number, timing, text, blank line)"
            )
        at = 1
    else:
        at = 0 if timing.match(first) else 1
    if at >= len(block) or not timing.match(block[at].strip()):
        found = block[at].strip()[:40] if at < len(block) else "the end of the cue"
        example = "00:00:01,000 --> 00:00:02,500" if fmt == "srt" else "00:01.000 --> 00:02.500"
        raise ConfigError(
            f"{name}, line {start + at}: cue {number} has no timing line ({example}), found "
            f"{found!r}; fix the cue"
        )
    return Cue(block[: at + 1], block[at + 1 :], start + at + 1, number)


@dataclass
class _Unit:
    """A stretch of a cue's text translated in one run: the whole cue, or one dialogue line."""

    cue: Cue
    text: str
    line: int
    lines: int  # lines it fills in the output
    dialogue: bool
    parts: list[tuple[int, str]] = field(default_factory=list)  # (sentence, its words here)


def translate_cues(cues: list[Cue], translate: Translate) -> None:
    """Fill each cue's `out` lines with its text translated; one call to `translate`."""
    units = [u for cue in cues for u in _units(cue)]
    runs = _runs(units)
    sentences: list[tuple[str, list[tuple[_Unit, str]], int]] = []
    for run in runs:
        sentences += _sentences(run)
    translations = translate([s for s, _, _ in sentences], [line for _, _, line in sentences])
    again: list[tuple[int, _Unit, str]] = []
    for k, ((_, shares, _), translation) in enumerate(zip(sentences, translations, strict=True)):
        words = translation.split()
        if len(shares) > 1 and len(words) < len(shares):
            again += [(k, unit, part) for unit, part in shares]  # too few words for its cues:
            continue  # each cue's part is translated alone
        weights = [len(part) for _, part in shares]
        for (unit, _), words_of_unit in zip(shares, _spread(words, weights), strict=True):
            unit.parts.append((k, words_of_unit))
    if again:
        redone = translate([part for _, _, part in again], [u.line for _, u, _ in again])
        for (k, unit, _), part in zip(again, redone, strict=True):
            unit.parts.append((k, part))
    of_cue: dict[int, list[_Unit]] = {}
    for unit in units:
        of_cue.setdefault(id(unit.cue), []).append(unit)
    for cue in cues:
        cue.out = _cue_lines(cue, of_cue.get(id(cue), []))


def _units(cue: Cue) -> list[_Unit]:
    lines = [line.rstrip("\r\n") for line in cue.text]
    if not lines:
        return []
    if len(lines) > 1 and all(_DIALOGUE.match(line) for line in lines):
        return [
            _Unit(
                cue, _plain(_DIALOGUE.sub("", _TAG.sub("", line), count=1)), cue.line + k, 1, True
            )
            for k, line in enumerate(lines)
        ]
    return [_Unit(cue, _plain(" ".join(lines)), cue.line, len(lines), False)]


def _plain(text: str) -> str:
    return " ".join(_TAG.sub("", text).split())


def _runs(units: list[_Unit]) -> list[list[_Unit]]:
    """Consecutive units joined until one ends a sentence (a dialogue line stands alone)."""
    runs: list[list[_Unit]] = []
    for unit in units:
        last = runs[-1] if runs else None
        if (
            last
            and not unit.dialogue
            and not last[-1].dialogue
            and len(last) < MAX_RUN
            and last[-1].text
            and not _ENDS_SENTENCE.search(last[-1].text)
        ):
            last.append(unit)
        else:
            runs.append([unit])
    return runs


def _sentences(run: list[_Unit]) -> list[tuple[str, list[tuple[_Unit, str]], int]]:
    """The sentences of a run's joined text, each with the units it spans and its part in each,
    and the file line where it starts."""
    text = " ".join(u.text for u in run)
    spans = []
    at = 0
    for unit in run:
        spans.append((unit, at, at + len(unit.text)))
        at += len(unit.text) + 1
    out = []
    for start, end in split_sentences(text):
        shares = [
            (unit, text[max(start, a) : min(end, b)].strip())
            for unit, a, b in spans
            if min(end, b) > max(start, a) and text[max(start, a) : min(end, b)].strip()
        ]
        out.append((text[start:end], shares, shares[0][0].line))
    return out


def _spread(words: list[str], weights: list[int]) -> list[str]:
    """`words` cut into len(weights) runs, each near its weight's share; none empty when there
    are enough words."""
    total, cuts, acc = sum(weights), [], 0
    for k, weight in enumerate(weights[:-1]):
        acc += weight
        cut = round(len(words) * acc / total)
        low = (cuts[-1] if cuts else 0) + 1
        high = len(words) - (len(weights) - 1 - k)
        cuts.append(max(low, min(cut, high)))
    bounds = [0, *cuts, len(words)]
    return [" ".join(words[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def _cue_lines(cue: Cue, units: list[_Unit]) -> list[str]:
    """The cue's translated text lines, each ended as the source's lines were."""
    ending = "\r\n" if cue.text and cue.text[-1].endswith("\r\n") else "\n"
    last = cue.text[-1][len(cue.text[-1].rstrip("\r\n")) :] if cue.text else ""
    lines: list[str] = []
    for unit in units:
        text = " ".join(p for _, p in sorted(unit.parts) if p)
        if unit.dialogue:
            marker = _DIALOGUE.match(_TAG.sub("", cue.text[unit.line - cue.line])).group(0)
            lines.append(marker.lstrip() + text)
        else:
            lines += _wrap(text, unit.lines)
    if not units:
        return []
    raw = "".join(cue.text)
    head, _, tail = _EDGE_TAGS.match(raw.strip()).groups()
    lines[0] = head + lines[0]
    lines[-1] += tail
    return [line + ending for line in lines[:-1]] + [lines[-1] + last]


def _wrap(text: str, n: int) -> list[str]:
    """`text` on `n` lines of about equal length (fewer when it has fewer words)."""
    words = text.split()
    n = min(n, len(words))
    if n <= 1:
        return [text]
    total = sum(len(w) + 1 for w in words)
    lines: list[list[str]] = [[]]
    acc = 0
    for k, word in enumerate(words):
        left = len(words) - k  # words not yet placed, this one included
        full = acc >= total * len(lines) / n
        if lines[-1] and len(lines) < n and (full or left <= n - len(lines)):
            lines.append([])
        lines[-1].append(word)
        acc += len(word) + 1
    return [" ".join(line) for line in lines]
