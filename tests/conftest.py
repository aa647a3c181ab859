"""Shared fixtures: a small synthetic parallel corpus and a tiny config; all outputs in tmp dirs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from helpers import ROOT, make_pairs, write_jsonl
from hypothesis import settings

from translator.config import Config, load_config

# Property tests search at random on a developer's machine and replay one fixed search in CI
# (CI=true), so a CI run cannot fail by the luck of the draw; a failure found locally is printed
# with the example, to be pinned with @example.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


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


@pytest.fixture(scope="session", autouse=True)
def _verify_every_store() -> Iterator[None]:
    """Every prepared store the tests write is opened with its full check right after it is
    written: the check must pass on all of them, whatever the settings."""
    from translator.data.integrity import verify_files
    from translator.data.store import StoreWriter

    commit = StoreWriter.commit

    def commit_and_verify(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        store = commit(self, *args, **kwargs)
        verify_files(store.path, store.meta)
        return store

    commit_and_verify.verified_by_the_suite = True  # type: ignore[attr-defined]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(StoreWriter, "commit", commit_and_verify)
        yield
