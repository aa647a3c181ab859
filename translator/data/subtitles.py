"""Subtitle habits taken out of training pairs (`data.subtitles`).

Subtitle corpora (OpenSubtitles) write things that a translator of everyday sentences should not
learn to produce:

- dialogue dashes: `- Who said so?`, two speakers on one line `- Yes. - No.`;
- sound notes and song marks: `[music]`, `[sighs]`, `♪ la la ♪`;
- speaker labels: `JOHN: Come here.`;
- lines aligned to the wrong line: the two sides disagree in their number of dialogue turns, or
  one side is several times longer than the other, or the "translation" is the English line
  itself.

`clean_subtitle_pair` takes the marks away (a pair with two turns on each side keeps both, joined
by a space) and drops the misaligned pairs. Round brackets stay: in ordinary text they are
ordinary.
"""

from __future__ import annotations

import re

from translator.data.read import Pair

# A dialogue turn starts at the start of the line, or after a sentence's end, with a dash.
_TURN = re.compile(r"(?:^|(?<=[.!?…\"»'’)]) )[-–—‐]+ ?(?=\S)")
_NOTE = re.compile(r"\[[^\]]*\]|[♪♫]+")
_SPEAKER = re.compile(r"^[A-Z][A-Z0-9 .'-]{1,24}: ")
LONGER = 3.0
"""A pair is dropped when one side has more than this many times the other's characters..."""
LONGER_FROM = 12
"""...and the longer side has more than this many characters (short pairs vary a lot)."""
SAME_WORDS = 4
"""A pair whose two sides are the same text of at least this many words is dropped (a line left
in English); shorter ones are often right (`OK.`, `No.`, names)."""


def clean_subtitle_pair(pair: Pair) -> Pair | None:
    """`pair` without subtitle marks, or None when it should not be trained on."""
    src, tgt = (_without_marks(side) for side in pair)
    if not src or not tgt:
        return None
    src_turns, src = _turns(src)
    tgt_turns, tgt = _turns(tgt)
    if src_turns != tgt_turns or not src or not tgt:
        return None
    short, long = sorted((len(src), len(tgt)))
    if long > LONGER_FROM and long > LONGER * short:
        return None
    if src == tgt and len(src.split()) >= SAME_WORDS:
        return None
    return src, tgt


def _without_marks(text: str) -> str:
    text = _SPEAKER.sub("", _NOTE.sub(" ", text))
    return " ".join(text.split())


def _turns(text: str) -> tuple[int, str]:
    """The number of dialogue turns (the parts that dashes separate: 1 without any), and the
    text without its dashes."""
    parts = [part for part in _TURN.split(text) if part.strip()]
    if len(parts) <= 1 and not _TURN.match(text):
        return 1, text
    return len(parts), " ".join(" ".join(parts).split())
