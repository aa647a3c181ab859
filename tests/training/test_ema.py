"""The weights' moving average (training/ema.py, train.ema_decay): its formula, ema.pt that
translate uses and a resume keeps averaging exactly, and its key checked."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import ROOT
from helpers import train_in_process as run

from translator.errors import ConfigError

TINY = ROOT / "configs" / "tiny.yaml"


def test_weight_average_follows_its_formula() -> None:
    from translator.training.ema import WeightAverage

    layer = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        layer.weight.fill_(1.0)
    average = WeightAverage(layer, decay=0.9)
    expected = 1.0
    for step, value in enumerate([3.0, -2.0, 5.0, 0.5, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0], 1):
        with torch.no_grad():
            layer.weight.fill_(value)
        average.update(step)
        d = min(0.9, (1 + step) / (10 + step))
        expected = d * expected + (1 - d) * value
        assert average.rate(step) == pytest.approx(d)
        torch.testing.assert_close(average.average[0], torch.full((1, 2), expected))
    assert average.rate(11) < 0.9 and average.rate(80) == pytest.approx(0.9)  # the ramp, then d
    state = average.model_state(layer)
    assert torch.equal(state["weight"], average.average[0]) and layer.weight[0, 0] == 4.0


def test_ema_run_writes_ema_pt_that_translate_uses_and_resume_keeps_averaging(
    corpus: Path,
) -> None:
    from translator.run.checkpoint import load_checkpoint
    from translator.run.paths import checkpoint_of_run

    ema = ("train.ema_decay=0.9", "train.average_last=2", "train.checkpoint_every=5")
    straight = run(corpus, "ema_straight", "train.max_steps=16", *ema)
    run(corpus, "ema_split", "train.max_steps=7", *ema)
    run(corpus, "ema_split", "train.max_steps=16", resume="latest")
    a_dir, b_dir = straight.paths.weights_dir, Path("weights/ema_split")
    a, b = load_checkpoint(a_dir / "ema.pt"), load_checkpoint(b_dir / "ema.pt")
    assert a["weights_only"] and "ema" not in a
    latest = load_checkpoint(a_dir / "latest.pt")
    differs = False
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name  # resume averages on exactly
        if name in latest["ema"]:
            assert torch.equal(tensor, latest["ema"][name]), name
            differs |= not torch.equal(tensor, latest["model"][name])
    assert differs  # the average is not the last weights
    assert checkpoint_of_run(a_dir) == a_dir / "ema.pt"
    assert all("ema" not in load_checkpoint(p) for p in a_dir.glob("step_*.pt"))


def test_ema_decay_out_of_range_names_the_key(corpus: Path) -> None:
    with pytest.raises(ConfigError, match=r"train\.ema_decay must be in \[0, 1\)"):
        run(corpus, "ema_bad", "train.max_steps=2", "train.ema_decay=1.0")
