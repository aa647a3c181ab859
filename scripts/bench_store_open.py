"""What proving a prepared store whole costs: the open of a large store, with and without the
check (sizes and SHA-256 of every file, meta.json's own digest, ids within the vocabulary).

    python scripts/bench_store_open.py --pairs 10000000

Writes a synthetic store of --pairs training pairs (random ids, 3 to 20 a side, uint16) with the
project's StoreWriter into --dir, then times `open_store(verify=False)` (the open before the
check existed: read meta.json, map the files) against `open_store()` (the same plus the check),
--repeat times each, alternating. The files are in the page cache after writing; with --cold
(root only) the cache is dropped before each open. Prints the figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_common import print_figures
from tokenizers import Tokenizer, models

from translator.data.store import StoreWriter, open_store

CHUNK = 200_000


def write_store(path: Path, pairs: int, vocab: int) -> float:
    """A store of `pairs` random training pairs and 1,000 validation pairs; seconds taken."""
    rng = np.random.default_rng(0)
    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab)}, unk_token="w0"))
    start = time.perf_counter()
    with StoreWriter(path, vocab) as writer:
        for base in range(0, pairs + 1000, CHUNK):
            n = min(CHUNK, pairs + 1000 - base)
            sides = []
            for _ in range(2):
                lengths = rng.integers(3, 21, n)
                flat = rng.integers(4, vocab, int(lengths.sum())).tolist()
                bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
                sides.append([flat[bounds[i] : bounds[i + 1]] for i in range(n)])
            split = "valid" if base >= pairs else "train"
            writer.append(split, sides[0], sides[1])
        writer.commit({"key": "bench"}, (tok, tok), [("a", "b")] * 1000, np.arange(1000))
    return time.perf_counter() - start


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pairs", type=int, default=10_000_000)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cold", action="store_true", help="drop the page cache before each open")
    p.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(dir=args.dir))
    path = root / "store"
    try:
        written = write_store(path, args.pairs, args.vocab)
        size = sum(f.stat().st_size for f in path.iterdir())
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.repeat):
            for label, verify in (("before", False), ("after", True)):
                if args.cold:
                    drop_caches()
                start = time.perf_counter()
                store = open_store(path, "bench", verify=verify)
                assert store is not None
                store.dataset("train")  # map the files, as a run does
                times[label].append(time.perf_counter() - start)
        before, after = statistics.median(times["before"]), statistics.median(times["after"])
        print_figures(
            {
                "pairs": args.pairs,
                "store_MiB": round(size / 2**20, 1),
                "write_s": round(written, 1),
                "cache": "cold" if args.cold else "warm",
                "open_before_s": round(before, 4),
                "open_after_s": round(after, 4),
                "check_s": round(after - before, 3),
                "check_MiB_per_s": round(size / 2**20 / max(after - before, 1e-9)),
                "runs": args.repeat,
            }
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
