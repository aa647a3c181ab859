"""Shared fixtures: a small synthetic parallel corpus and a tiny config; all outputs in tmp dirs."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from translator.config import Config, load_config

ROOT = Path(__file__).resolve().parents[1]

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


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A 600-pair toy corpus as JSON Lines."""
    return write_jsonl(tmp_path / "corpus.jsonl", make_pairs(600))


@pytest.fixture
def tiny_config(corpus: Path) -> Config:
    """configs/tiny.yaml pointed at the toy corpus."""
    return load_config(ROOT / "configs" / "tiny.yaml", [f"data.source={corpus}"])


@pytest.fixture(scope="session", autouse=True)
def _one_thread() -> Iterator[None]:
    """Tiny models train fastest on one thread, and do not crawl when the other core is busy
    (processes the tests start choose their own threads)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test in its own directory, with no network and a private datasets cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
