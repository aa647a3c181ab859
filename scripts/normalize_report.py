"""How `data.restore_accents` changes a corpus: the number of Italian lines it changes, the words
it rewrites most, and a random sample of changed lines (before -> after).

    python scripts/normalize_report.py [--data ../shared/data/en-it/opensubs.jsonl] [--n 30]
"""

from __future__ import annotations

import argparse
import random
import re
from collections import Counter
from pathlib import Path

from bench_common import DEFAULT_DATA

from translator.data.normalize import accent_lexicon, nfc, restore_accents
from translator.data.read import read_local_pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--lang", default="it")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lines = [nfc(t) for _, t in read_local_pairs(args.data, "en", args.lang)]
    lexicon = accent_lexicon(lines)
    changed = [(line, restore_accents(line, lexicon)) for line in lines]
    changed = [(a, b) for a, b in changed if a != b]
    words: Counter[tuple[str, str]] = Counter()
    for a, b in changed:
        for old, new in zip(re.findall(r"\S+", a), re.findall(r"\S+", b), strict=True):
            if old != new:
                words[(old, new)] += 1
    print(f"{len(changed):,} of {len(lines):,} lines changed; {sum(words.values()):,} words")
    print("most rewritten:", ", ".join(f"{a} -> {b} ({n})" for (a, b), n in words.most_common(15)))
    for a, b in random.Random(args.seed).sample(changed, min(args.n, len(changed))):
        print(f"- {a}\n  {b}")


if __name__ == "__main__":
    main()
