"""A run directory written before the package was split into wings still translates, validates
and resumes (tests/fixtures/run_before_layout, made at commit aee4573; see its README)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch
from helpers import FIXTURES, cli

FIXTURE = FIXTURES / "run_before_layout"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """A copy of the fixture: corpus.jsonl and weights/old/ (config, split, tokenizers,
    encoded.npz, latest.pt at step 20)."""
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    return tmp_path


def test_old_run_translates(old_run: Path) -> None:
    done = cli(old_run, "translate", "--run", "old", "one two .", "the red cat .")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
    assert "latest.pt (step 20)" in done.stderr


def test_old_run_validates(old_run: Path) -> None:
    done = cli(old_run, "validate", "--run", "old")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^sentences +50$", done.stdout, re.M), done.stdout
    assert re.search(r"^BLEU +\d+\.\d\d$", done.stdout, re.M), done.stdout


def test_old_run_resumes(old_run: Path) -> None:
    done = cli(old_run, "train", "--run", "old", "--resume", "--set", "train.max_steps=24")
    assert done.returncode == 0, done.stderr
    assert "resumed from" in done.stderr and "at step 20" in done.stderr, done.stderr
    # encoded.npz is an earlier version's cache: the data is prepared into a store, once, from
    # the run's own split and tokenizers (their fingerprints are checked against the checkpoint)
    assert "prepared by an earlier version (encoded.npz)" in done.stderr
    assert (old_run / "weights" / "old" / "store.json").is_file()
    state = torch.load(old_run / "weights" / "old" / "latest.pt", weights_only=False)
    assert state["progress"]["step"] == 24
