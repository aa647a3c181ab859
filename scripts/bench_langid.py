"""Is a language identifier good enough to find subtitle lines in the wrong language?

py3langid (a pip package with its model inside) labels each side of every pair: on the Tatoeba
dev set, where every line is in its language by construction, each flag is a false alarm; on the
subtitle corpus, a flag is a candidate for removal, and a seeded sample of flagged pairs is printed
to be read by eye. Three label sets: all 97 of the model's languages, six European ones, and
English and Italian only.

    pip install py3langid   # not a dependency of translator: this script only
    python scripts/bench_langid.py --dev ../shared/data/en-it/tatoeba-dev.jsonl

Prints, per label set and file, the share of English and Italian lines and of pairs flagged and
the lines per second, then one JSON line.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from bench_common import DEFAULT_DATA, print_figures

from translator.data.read import read_local_pairs

LABEL_SETS = {"all": None, "six": ["en", "it", "es", "fr", "de", "pt"], "en_it": ["en", "it"]}


def flagged(langid, pairs: list[tuple[str, str]]) -> tuple[list[int], int, int, float]:
    """Indexes of pairs with a side labelled other than en/it, the count per side, seconds."""
    start = time.perf_counter()
    bad_en = [langid.classify(src)[0] != "en" for src, _ in pairs]
    bad_it = [langid.classify(tgt)[0] != "it" for _, tgt in pairs]
    seconds = time.perf_counter() - start
    either = [i for i, (a, b) in enumerate(zip(bad_en, bad_it, strict=True)) if a or b]
    return either, sum(bad_en), sum(bad_it), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the subtitle corpus")
    parser.add_argument("--dev", type=Path, required=True, help="pairs known to be en/it")
    parser.add_argument("--sample", type=int, default=40, help="flagged corpus pairs to print")
    args = parser.parse_args()
    try:
        import py3langid as langid
    except ImportError:
        sys.exit("bench_langid.py needs py3langid: pip install py3langid")
    files = {
        name: read_local_pairs(path, "en", "it")
        for name, path in (("dev", args.dev), ("corpus", args.data))
    }
    figures: dict[str, object] = {}
    for label, languages in LABEL_SETS.items():
        langid.set_languages(languages)
        for name, pairs in files.items():
            either, en, it, seconds = flagged(langid, pairs)
            n = len(pairs)
            figures[f"{label}_{name}_en_flagged_pct"] = 100 * en / n
            figures[f"{label}_{name}_it_flagged_pct"] = 100 * it / n
            figures[f"{label}_{name}_pairs_flagged_pct"] = 100 * len(either) / n
            figures[f"{label}_{name}_lines_per_s"] = 2 * n / seconds
            if name == "corpus" and label == "en_it":
                print(f"{args.sample} of the {len(either):,} corpus pairs flagged (en/it labels):")
                for i in random.Random(0).sample(either, min(args.sample, len(either))):
                    print(f"  {pairs[i][0]!r} -> {pairs[i][1]!r}")
    print_figures(figures)


if __name__ == "__main__":
    main()
