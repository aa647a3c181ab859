"""Which sentence splitter: each candidate installed here, measured on the dev set, where the true
boundaries are known.

    pip install sentencex pysbd nupunkt sentence-splitter syntok   # the candidates
    python scripts/bench_split.py                                  # a table, then one JSON line

- joins found: consecutive dev lines put on one line (3 or 6 a line, each joined by one space, the
  whole dev set in order); a join is found when the splitter ends a sentence there.
- one-sentence lines split: each dev line alone. A dev line holds several sentences (`Relax.
  You're safe now.`) when most candidates split it; the others hold one, and splitting one of
  them is an error. The lines of the first kind are printed once, to be checked by eye.
- kept whole: hand-made sentences with an abbreviation, a decimal, a quote or an ellipsis inside,
  each followed by a second sentence: the splitter must cut once, at the true boundary.
- time: splitting every dev line once.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared/data/en-it/tatoeba-dev.jsonl"

# (first sentence, second sentence): the first holds what a naive splitter cuts at.
KEPT_WHOLE = [
    ("Mr. Brown met Mrs. Smith at 5 p.m. on Monday.", "They talked."),
    ("It costs $3.50 today.", "That's cheap."),
    ("Version 2.0 is out.", "Get it."),
    ("I was... tired.", "Go."),
    ("Wait... what did you say?", "Nothing."),
    ('He said "Go now."', "Then he left."),
    ("Visit e.g. Rome, i.e. the capital.", "Nice."),
    ("The U.S. Army is big.", "Yes."),
    ("See St. Peter's Square.", "Wow."),
    ("I met J. K. Rowling yesterday.", "She was nice."),
    ("It's 3.14159 exactly.", "OK?"),
    ("Mt. Fuji is high.", "So is K2."),
    ("He's 6 ft. tall.", "Wow."),
    ("Ask Dr. Smith about it.", "He knows."),
    ("Call me at 10 a.m. tomorrow.", "Thanks."),
    ("No. 5 is mine.", "Yes."),
    ("I saw Dr. Who today.", "It was fun."),
    ("Prof. Kim came at 9.30 sharp.", "Then we began."),
]


def candidates() -> dict[str, Callable[[str], list[str]]]:
    """The installed splitters, each as text -> its sentences (stripped)."""
    found: dict[str, Callable[[str], list[str]]] = {}
    if importlib.util.find_spec("sentencex"):
        import sentencex

        found["sentencex"] = lambda t: [s.strip() for s in sentencex.segment("en", t) if s.strip()]
    if importlib.util.find_spec("pysbd"):
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False)
        found["pysbd"] = lambda t: [s.strip() for s in seg.segment(t) if s.strip()]
    if importlib.util.find_spec("nupunkt"):
        import nupunkt

        found["nupunkt"] = lambda t: [s.strip() for s in nupunkt.sent_tokenize(t) if s.strip()]
    if importlib.util.find_spec("sentence_splitter"):
        from sentence_splitter import SentenceSplitter

        moses = SentenceSplitter(language="en")
        found["sentence-splitter (Moses)"] = lambda t: [s for s in moses.split(t) if s.strip()]
    if importlib.util.find_spec("syntok"):
        import syntok.segmenter as syntok

        def syntok_split(text: str) -> list[str]:
            return [
                "".join(tok.spacing + tok.value for tok in sent).strip()
                for para in syntok.process(text)
                for sent in para
            ]

        found["syntok"] = syntok_split
    from translator.inference.segment import split_sentences  # the product's own, as shipped

    found["translator (shipped)"] = lambda t: [t[a:b] for a, b in split_sentences(t)]
    return found


def ends(sentences: list[str], text: str) -> set[int]:
    """Character offsets in `text` where the sentences end (each found in order)."""
    out, at = set(), 0
    for sentence in sentences:
        start = text.find(sentence, at)
        if start < 0:  # a splitter that rewrote spaces: match on the first word
            start = text.find(sentence.split()[0], at)
        at = start + len(sentence)
        out.add(at)
    return out


def joins_found(split: Callable[[str], list[str]], lines: list[str], k: int) -> tuple[int, int]:
    """(joins found, joins) over the dev set put `k` lines a line."""
    found = total = 0
    for start in range(0, len(lines) - k + 1, k):
        group = lines[start : start + k]
        text = " ".join(group)
        boundaries, at = [], 0
        for line in group[:-1]:
            at += len(line)
            boundaries.append(at)
            at += 1
        cut = ends(split(text), text)
        total += len(boundaries)
        found += sum(b in cut for b in boundaries)
    return found, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, default=DEV)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    lines = [json.loads(x)["translation"]["en"].strip() for x in args.dev.open(encoding="utf-8")]
    splitters = candidates()
    split_lines = {name: {x for x in lines if len(f(x)) > 1} for name, f in splitters.items()}
    several = {x for x in lines if sum(x in s for s in split_lines.values()) * 2 > len(splitters)}
    print(f"{len(several)} dev lines hold several sentences (most splitters cut them):")
    for line in sorted(several):
        print(f"  {line}")
    print()
    print(
        "| splitter | joins found, 3 a line | 6 a line | one-sentence lines split | "
        f"kept whole (of {len(KEPT_WHOLE)}) | s for the dev set |"
    )
    print("|---|---|---|---|---|---|")
    figures = {}
    for name, split in splitters.items():
        start = time.perf_counter()
        for line in lines:
            split(line)
        seconds = time.perf_counter() - start
        j3, n3 = joins_found(split, lines, 3)
        j6, n6 = joins_found(split, lines, 6)
        wrong = len(split_lines[name] - several)
        single = len(lines) - len(several)
        kept = sum(split(f"{a} {b}") == [a, b] for a, b in KEPT_WHOLE)
        figures[name] = {"joins3": [j3, n3], "joins6": [j6, n6], "wrong_splits": [wrong, single]}
        figures[name].update({"kept_whole": kept, "seconds": round(seconds, 3)})
        print(
            f"| {name} | {j3:,}/{n3:,} ({100 * j3 / n3:.2f}%) | {j6:,}/{n6:,} "
            f"({100 * j6 / n6:.2f}%) | {wrong}/{single:,} ({100 * wrong / single:.2f}%) | "
            f"{kept} | {seconds:.2f} |"
        )
    missed = [
        (a, b) for a, b in KEPT_WHOLE if splitters["translator (shipped)"](f"{a} {b}") != [a, b]
    ]
    if missed:
        print(f"\nthe shipped splitter cuts wrongly: {missed}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
