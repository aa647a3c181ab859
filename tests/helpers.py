"""Helpers shared by the tests of every wing: the toy corpus, the real CLI in a subprocess, a
tiny run trained with it, and its exports. Fixtures live in conftest.py."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

# A toy "English -> Italian" language: number words, a few nouns and a determiner.
EN_IT = {
    "one": "uno",
    "two": "due",
    "three": "tre",
    "four": "quattro",
    "five": "cinque",
    "six": "sei",
    "seven": "sette",
    "eight": "otto",
    "nine": "nove",
    "ten": "dieci",
    "cat": "gatto",
    "dog": "cane",
    "house": "casa",
    "red": "rosso",
    "big": "grande",
    "the": "il",
    "and": "e",
    "is": "è",
}


def make_pairs(n: int, seed: int = 0, max_words: int = 8) -> list[tuple[str, str]]:
    """`n` word-for-word translation pairs of the toy language."""
    rng = random.Random(seed)
    words = list(EN_IT)
    pairs = []
    for _ in range(n):
        en = [rng.choice(words) for _ in range(rng.randint(1, max_words))]
        pairs.append((" ".join(en) + " .", " ".join(EN_IT[w] for w in en) + " ."))
    return pairs


def write_jsonl(path: Path, pairs: list[tuple[str, str]]) -> Path:
    """Write pairs in the opus_books schema."""
    with path.open("w", encoding="utf-8") as f:
        for i, (en, it) in enumerate(pairs):
            f.write(json.dumps({"id": str(i), "translation": {"en": en, "it": it}}) + "\n")
    return path


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


def start_cli(*args: str) -> subprocess.Popen:
    """`python -m translator ARGS` started in the current directory, one thread, stderr piped."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "translator", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def scalars(log_dir: Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) pairs of one scalar tag, read back from the event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def train_in_process(corpus: Path, name: str, *extra: str, resume: str | None = None):
    """`train_command` with tiny.yaml on `corpus` in this process (small batches, no evaluation,
    no checkpoint before the end); the Trainer."""
    from translator.training.train import train_command

    overrides = [
        f"data.source={corpus}",
        "train.batch_tokens=256",
        "train.eval_every=0",
        "train.checkpoint_every=1000",
        "train.epochs=50",
        *extra,
    ]
    return train_command(ROOT / "configs" / "tiny.yaml", overrides, name, resume, "cpu")
