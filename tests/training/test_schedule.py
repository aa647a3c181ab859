"""The learning-rate schedule, and the Trainer following it to the deadline."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from translator.config import Config, TrainConfig
from translator.data.prepare import prepare_data
from translator.model.transformer import build_model
from translator.run.paths import RunPaths
from translator.training.schedule import learning_rate
from translator.training.trainer import Trainer


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_decay_reaches_zero_at_the_step_budget(schedule: str) -> None:
    cfg = TrainConfig(lr=1e-3, warmup_steps=10, schedule=schedule)
    lrs = [learning_rate(s, cfg, total_steps=110) for s in range(111)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)
    after = lrs[10:]
    assert all(a > b for a, b in zip(after, after[1:], strict=False))  # strictly decreasing
    assert lrs[60] == pytest.approx(1e-3 * (0.5 if schedule == "linear" else 0.5))
    assert lrs[110] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_decay_follows_the_time_budget_when_it_runs_out_first(schedule: str) -> None:
    cfg = TrainConfig(lr=1e-3, warmup_steps=0, schedule=schedule)
    by_time = [learning_rate(50, cfg, 10_000, time_fraction=f) for f in (0.25, 0.5, 0.75, 1.0)]
    assert all(a > b for a, b in zip(by_time, by_time[1:], strict=False))
    assert by_time[-1] == pytest.approx(0.0, abs=1e-12)
    # whichever budget is closer to its end wins
    assert learning_rate(9_000, cfg, 10_000, time_fraction=0.1) == pytest.approx(
        learning_rate(0, cfg, 10_000, time_fraction=0.9)
    )


def test_inverse_sqrt_and_constant_are_unchanged() -> None:
    cfg = TrainConfig(lr=1e-3, warmup_steps=100)
    assert learning_rate(399, cfg) == pytest.approx(1e-3 * math.sqrt(100 / 400))
    constant = dataclasses.replace(cfg, schedule="constant")
    assert learning_rate(5, constant, time_fraction=0.99) == pytest.approx(6e-5)
    assert learning_rate(5000, constant, 10, time_fraction=1.0) == pytest.approx(1e-3)


def make_trainer(config: Config) -> Trainer:
    paths = RunPaths.create("s")
    paths.make()
    data = prepare_data(config, paths)
    model = build_model(
        config.model, data.src_tokenizer.get_vocab_size(), data.tgt_tokenizer.get_vocab_size()
    )
    return Trainer(config, model, data, paths, torch.device("cpu"))


def test_the_trainer_ends_a_step_budget_at_zero_learning_rate(tiny_config: Config) -> None:
    """The rate the optimizer really used: rising in warmup, then falling to ~0 at max_steps."""
    train = dataclasses.replace(
        tiny_config.train, schedule="linear", max_steps=30, warmup_steps=5, eval_every=0
    )
    trainer = make_trainer(dataclasses.replace(tiny_config, train=train))
    used = []
    step = trainer.optimizer.step

    def record(*args, **kwargs):
        used.append(trainer.optimizer.param_groups[0]["lr"])
        return step(*args, **kwargs)

    trainer.optimizer.step = record
    trainer.fit()
    assert len(used) == 30
    assert used[4] == pytest.approx(train.lr)
    assert used[-1] == pytest.approx(train.lr / 25, rel=1e-6)  # one step from the end
    assert used[5] == pytest.approx(train.lr)  # the decay starts from the peak
    assert all(a > b for a, b in zip(used[5:], used[6:], strict=False))


def test_the_trainer_follows_the_clock_to_max_minutes(
    tiny_config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With max_minutes, the rate falls with elapsed time, and a resumed session goes on from
    the share already used."""
    clock = [1000.0]
    monkeypatch.setattr("translator.training.trainer.time.monotonic", lambda: clock[0])
    train = dataclasses.replace(
        tiny_config.train,
        schedule="linear",
        max_steps=None,
        epochs=1000,
        max_minutes=1.0,
        warmup_steps=0,
        eval_every=0,
    )
    trainer = make_trainer(dataclasses.replace(tiny_config, train=train))
    used = []
    step = trainer.optimizer.step

    def tick(*args, **kwargs):
        used.append(trainer.optimizer.param_groups[0]["lr"])
        clock[0] += 6.0  # each step takes a tenth of the minute
        return step(*args, **kwargs)

    trainer.optimizer.step = tick
    trainer.fit()
    # steps at 0, 6, ..., 60 s, then the one at 66 s that finds the deadline passed
    assert len(used) == 12
    for n, lr in enumerate(used):
        assert lr == pytest.approx(train.lr * max(0.0, 1 - n / 10), abs=1e-9)
    assert trainer.progress.time_fraction == pytest.approx(1.0)


def test_learning_rate_warms_up_then_decays() -> None:
    cfg = TrainConfig(lr=1e-3, warmup_steps=100)
    lrs = [learning_rate(s, cfg) for s in range(400)]
    assert lrs[0] < lrs[50] < lrs[99]
    assert max(lrs) == pytest.approx(1e-3)
    assert lrs[399] == pytest.approx(1e-3 * math.sqrt(100 / 400))
    assert all(x >= y for x, y in zip(lrs[99:], lrs[100:], strict=False))


def test_constant_schedule_and_zero_warmup() -> None:
    constant = TrainConfig(lr=1e-3, warmup_steps=10, schedule="constant")
    assert [learning_rate(s, constant) for s in (0, 4, 9)] == pytest.approx([1e-4, 5e-4, 1e-3])
    assert {learning_rate(s, constant) for s in range(10, 500)} == {1e-3}
    flat = TrainConfig(lr=1e-3, warmup_steps=0, schedule="constant")
    assert {learning_rate(s, flat) for s in range(500)} == {1e-3}
    decay = TrainConfig(lr=1e-3, warmup_steps=0)  # inverse square root from the first step
    assert [learning_rate(s, decay) for s in (0, 3, 99)] == pytest.approx([1e-3, 5e-4, 1e-4])
