"""Helpers for the export and serve tests: a tiny run trained with the real CLI, and its exports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, make_pairs, write_jsonl


def cli(root: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m translator ARGS` in `root`, offline, one thread."""
    env = {**os.environ, "HOME": str(root / "home"), "OMP_NUM_THREADS": "1"}
    env |= {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "translator", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def train_tiny(root: Path, steps: int = 150, *overrides: str) -> Path:
    """Train run `tiny` on the toy corpus in `root`; return its weights directory."""
    corpus = write_jsonl(root / "corpus.jsonl", make_pairs(600))
    sets = [f"train.max_steps={steps}", "train.eval_every=0", f"train.checkpoint_every={steps}"]
    args = ["train", "--config", str(ROOT / "configs" / "tiny.yaml"), "--run", "tiny"]
    for item in [f"data.source={corpus}", *sets, *overrides]:
        args += ["--set", item]
    done = cli(root, *args, timeout=900)  # ~15 s alone; far longer on a busy machine
    assert done.returncode == 0, done.stderr
    return root / "weights" / "tiny"


def export(root: Path, quantization: str, name: str | None = None) -> Path:
    """`translator export --run tiny` into `root/NAME`."""
    out = root / (name or f"ct2-{quantization}")
    done = cli(
        root, "export", "--run", "tiny", "--output", str(out), "--quantization", quantization
    )
    assert done.returncode == 0, done.stderr
    return out
