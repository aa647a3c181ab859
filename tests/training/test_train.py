"""`translator train` (training/train.py): a resume equals an uninterrupted run, a new run refuses
to overwrite checkpoints, and a resume without one says so."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from helpers import ROOT
from helpers import train_in_process as run

from translator.errors import CheckpointError, ConfigError

TINY = ROOT / "configs" / "tiny.yaml"


def test_resume_mid_epoch_equals_uninterrupted_run(corpus: Path) -> None:
    straight = run(corpus, "straight", "train.max_steps=24", "train.accum_steps=2")
    steps_per_epoch = math.ceil(len(straight.sampler.batches(0)) / 2)
    assert 24 > steps_per_epoch and 11 % steps_per_epoch != 0  # the stop falls mid-epoch

    first = run(corpus, "split", "train.max_steps=11", "train.accum_steps=2")
    assert first.progress.batch_in_epoch != 0
    second = run(corpus, "split", "train.max_steps=24", resume="latest")
    assert second.progress.step == 24
    assert first.losses + second.losses == straight.losses
    for (name, p), q in zip(
        straight.model.named_parameters(), second.model.parameters(), strict=True
    ):
        assert torch.equal(p, q), name


def test_new_run_refuses_to_overwrite_checkpoints(corpus: Path) -> None:
    run(corpus, "once", "train.max_steps=2")
    with pytest.raises(ConfigError, match="--resume"):
        run(corpus, "once", "train.max_steps=2")


def test_resume_without_checkpoint_says_so(corpus: Path) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint"):
        run(corpus, "never", "train.max_steps=2", resume="latest")


# --------------------------------------------------------------------------- weight average
