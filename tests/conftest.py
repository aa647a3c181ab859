"""Shared fixtures: a small synthetic parallel corpus and a tiny config; all outputs in tmp dirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from helpers import ROOT, make_pairs, write_jsonl

from translator.config import Config, load_config


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


@pytest.fixture(scope="session", autouse=True)
def _private_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A home and datasets cache of the session's own, set before any module-wide fixture
    trains or prepares (the per-test `_isolated` comes too late for those), so no test writes
    prepared stores into the user's ~/.cache."""
    home = tmp_path_factory.mktemp("session-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("HF_HOME", str(home / "hf-home"))
        mp.setenv("HF_DATASETS_OFFLINE", "1")
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test in its own directory, with no network and a private datasets cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
