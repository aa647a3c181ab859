"""Preparing a corpus takes memory that does not grow with it beyond a few bytes per pair (slow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, make_pairs

sys.path.insert(0, str(ROOT / "scripts"))
from bench_prepare import TreeMemory  # noqa: E402

BYTES_PER_PAIR = 200
"""The bound on peak-memory growth per pair; the text alone is ~60 bytes a pair here, and held as
Python objects (as before the store) it cost ~3,600 bytes a pair."""


def peak_prepare_rss(tmp: Path, n: int) -> int:
    """Peak RSS of the process tree of `translator prepare` on `n` toy pairs (as a Moses pair)."""
    prefix = tmp / f"c{n}.en-it"
    pairs = make_pairs(n, seed=n, max_words=12)
    for side, lang in enumerate(("en", "it")):
        Path(f"{prefix}.{lang}").write_text("".join(p[side] + "\n" for p in pairs))
    del pairs
    args = [sys.executable, "-m", "translator", "prepare", "--config",
            str(ROOT / "configs" / "tiny.yaml"), "--set", f"data.source={prefix}",
            "--set", "data.dedup=false", "--set", f"data.store_dir={tmp / 'stores'}"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    memory = TreeMemory(proc.pid, every=0.05)
    _, stderr = proc.communicate(timeout=900)
    peak, _private = memory.stop()  # all of it: the stricter of the two
    assert proc.returncode == 0, stderr
    return peak


@pytest.mark.slow
def test_prepare_memory_grows_by_a_few_bytes_per_pair(tmp_path: Path) -> None:
    small, large = 50_000, 400_000
    growth = peak_prepare_rss(tmp_path, large) - peak_prepare_rss(tmp_path, small)
    per_pair = growth / (large - small)
    print(
        f"peak RSS growth {growth / 1e6:.1f} MB over {large - small:,} pairs: {per_pair:.0f} B/pair"
    )
    assert per_pair < BYTES_PER_PAIR
