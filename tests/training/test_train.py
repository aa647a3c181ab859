"""Trainer invariants: accumulation equals one big batch, resume equals an uninterrupted run."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch
from helpers import ROOT

from translator.config import Config, TrainConfig
from translator.data.batching import collate
from translator.data.prepare import prepare_data
from translator.errors import CheckpointError, ConfigError
from translator.model.transformer import build_model
from translator.run.paths import RunPaths
from translator.training.train import train_command
from translator.training.trainer import Trainer, learning_rate

TINY = ROOT / "configs" / "tiny.yaml"


def make_trainer(config: Config, name: str = "t") -> Trainer:
    paths = RunPaths.create(name)
    paths.make()
    data = prepare_data(config, paths)
    torch.manual_seed(0)
    model = build_model(
        config.model, data.src_tokenizer.get_vocab_size(), data.tgt_tokenizer.get_vocab_size()
    )
    return Trainer(config, model, data, paths, torch.device("cpu"))


def test_accumulated_step_equals_step_on_union(tiny_config: Config) -> None:
    config = dataclasses.replace(
        tiny_config,
        model=dataclasses.replace(tiny_config.model, dropout=0.0),
        # lr 1 from the first step: a normalisation error must show above float tolerance
        train=dataclasses.replace(tiny_config.train, lr=1.0, warmup_steps=0),
    )
    a, b = make_trainer(config, "a"), make_trainer(config, "b")
    b.model.load_state_dict(a.model.state_dict())
    # SGD: Adam would turn the float noise of zero gradients (key biases) into full-size steps
    for t in (a, b):
        t.optimizer = torch.optim.SGD(t.model.parameters(), lr=1.0)
    items = [a.data.train[i] for i in range(12)]
    loss_a, _ = a.train_step([collate(items[:5]), collate(items[5:])])
    loss_b, _ = b.train_step([collate(items)])
    assert loss_a == pytest.approx(loss_b, rel=1e-5)
    for (name, pa), pb in zip(a.model.named_parameters(), b.model.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, atol=1e-6, rtol=1e-5, msg=name)


def test_learning_rate_warms_up_then_decays() -> None:
    cfg = TrainConfig(lr=1e-3, warmup_steps=100)
    lrs = [learning_rate(s, cfg) for s in range(400)]
    assert lrs[0] < lrs[50] < lrs[99]
    assert max(lrs) == pytest.approx(1e-3)
    assert lrs[399] == pytest.approx(1e-3 * math.sqrt(100 / 400))
    assert all(x >= y for x, y in zip(lrs[99:], lrs[100:], strict=False))


def run(corpus: Path, name: str, *extra: str, resume: str | None = None) -> Trainer:
    overrides = [
        f"data.source={corpus}",
        "train.batch_tokens=256",
        "train.eval_every=0",
        "train.checkpoint_every=1000",
        "train.epochs=50",
        *extra,
    ]
    return train_command(TINY, overrides, name, resume, "cpu")


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


def test_nonfinite_loss_stops_with_step_or_is_skipped(corpus: Path) -> None:
    from translator.training.trainer import TrainingError

    with pytest.raises(TrainingError, match=r"step \d+: the loss is not finite"):
        run(
            corpus,
            "nan",
            "train.max_steps=3",
            "train.lr=1e30",
            "train.warmup_steps=0",
            "train.clip_norm=null",
        )
    skipped = run(
        corpus,
        "nanskip",
        "train.max_steps=3",
        "train.lr=1e30",
        "train.warmup_steps=0",
        "train.clip_norm=null",
        "train.on_nonfinite=skip",
    )
    assert skipped.progress.skipped_steps >= 1
    assert not Path("weights/nanskip/best.pt").exists() or math.isfinite(
        skipped.progress.best_valid_loss
    )


def test_nonfinite_step_leaves_weights_and_optimizer_untouched(tiny_config: Config) -> None:
    trainer = make_trainer(tiny_config)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    batch = collate([trainer.data.train[i] for i in range(8)])
    finite_loss = trainer.batch_loss
    trainer.batch_loss = lambda *a, **k: finite_loss(*a, **k) * math.nan  # type: ignore[method-assign]
    loss, _ = trainer.train_step([batch])
    assert math.isnan(loss)
    for name, p in trainer.model.named_parameters():
        assert torch.equal(p, before[name]) and p.grad is None, name
    assert not trainer.optimizer.state  # Adam's moments were not touched either
    trainer.batch_loss = finite_loss  # type: ignore[method-assign]
    trainer.train_step([batch])  # a finite step does move the weights
    assert any(not torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())


def test_max_minutes_ends_training_normally(corpus: Path) -> None:
    trainer = run(corpus, "timed", "train.max_steps=100000", "train.max_minutes=0.0005")
    assert 1 <= trainer.progress.step < 100  # stopped by the clock, not by max_steps
    state = torch.load("weights/timed/latest.pt", weights_only=True)
    assert state["progress"]["step"] == trainer.progress.step


# --------------------------------------------------------------------------- weight average


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
