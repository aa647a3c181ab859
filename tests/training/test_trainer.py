"""The Trainer (training/trainer.py): accumulation equals one big batch, a non-finite loss stops or
is skipped and a non-finite step touches nothing, max_minutes ends training normally, the best
checkpoint follows train.best_metric, and adam_beta2 reaches the optimizer."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch
from helpers import ROOT, scalars
from helpers import train_in_process as run

from translator.config import Config
from translator.data.batching import collate
from translator.data.prepare import prepare_data
from translator.errors import ConfigError
from translator.model.transformer import build_model
from translator.run.paths import RunPaths
from translator.training import trainer as train_module
from translator.training.train import train_command
from translator.training.trainer import Trainer

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


def run_logged(corpus: Path, name: str, *extra: str) -> Trainer:
    overrides = [f"data.source={corpus}", "train.epochs=100", "train.log_every=1", *extra]
    return train_command(TINY, overrides, name, None, "cpu")


def checkpoint_step(path: Path) -> int:
    return int(torch.load(path, weights_only=True)["progress"]["step"])


def test_best_metric_bleu_keeps_the_checkpoint_of_the_highest_bleu(corpus: Path) -> None:
    trainer = run_logged(
        corpus, "bleu", "train.max_steps=24", "train.eval_every=6", "train.best_metric=bleu",
        "train.schedule=constant", "train.warmup_steps=0",
    )  # fmt: skip
    bleu = scalars(Path("runs/bleu"), "valid/bleu")
    assert [s for s, _ in bleu] == [6, 12, 18, 24]
    best = max(v for _, v in bleu)
    first_best = next(s for s, v in bleu if v == best)
    assert checkpoint_step(Path("weights/bleu/best.pt")) == first_best
    assert trainer.progress.best_bleu == pytest.approx(best)
    # schedule constant, warmup 0: the optimizer used lr from the first step on
    lrs = [v for _, v in scalars(Path("runs/bleu"), "train/lr")]
    assert len(lrs) == 24 and lrs == pytest.approx([3e-3] * 24)


@pytest.mark.parametrize(
    ("metric", "saved_at", "best"),
    [
        ("bleu", [1, 4], (1.0, 12.0)),
        ("loss", [1, 2, 3], (1.0, 12.0)),
        ("dev/bleu", [1, 2], (0.5, 9.0)),
        ("dev/loss", [1, 4], (0.5, 9.0)),
    ],
)
def test_best_checkpoint_follows_best_metric(
    tiny_config: Config,
    monkeypatch: pytest.MonkeyPatch,
    metric: str,
    saved_at: list[int],
    best: tuple[float, float],
) -> None:
    """Scripted evaluations whose best loss and best BLEU fall on different ones, on the
    validation split and on an eval set (whose best the progress then keeps)."""
    train = dataclasses.replace(tiny_config.train, best_metric=metric, eval_sets={"dev": "x"})
    config = dataclasses.replace(tiny_config, train=train)
    paths = RunPaths.create("scripted")
    paths.make()
    data = prepare_data(config, paths)
    model = build_model(config.model, data.src_tokenizer.get_vocab_size(),
                        data.tgt_tokenizer.get_vocab_size())  # fmt: skip
    trainer = Trainer(config, model, data, paths, torch.device("cpu"))
    valid = [(3.0, 10.0), (2.0, 5.0), (1.0, 7.0), (4.0, 12.0)]  # (loss, BLEU)
    dev = [(1.0, 1.0), (2.0, 9.0), (3.0, 8.0), (0.5, 2.0)]
    scripted = iter(
        {"valid/loss": v[0], "valid/bleu": v[1], "dev/loss": d[0], "dev/bleu": d[1]}
        for v, d in zip(valid, dev, strict=True)
    )
    monkeypatch.setattr(train_module, "validate_and_sample", lambda _: next(scripted))
    saved: list[int] = []
    monkeypatch.setattr(trainer, "save", lambda path: saved.append(trainer.progress.step))
    for step in range(1, 5):
        trainer.progress.step = step
        trainer._validate_and_sample()
    assert saved == saved_at
    assert (trainer.progress.best_valid_loss, trainer.progress.best_bleu) == best


def test_best_metric_loss_and_eval_bleu_off(corpus: Path) -> None:
    run_logged(corpus, "loss", "train.max_steps=24", "train.eval_every=6", "train.eval_bleu=false")
    losses = scalars(Path("runs/loss"), "valid/loss")
    assert [s for s, _ in losses] == [6, 12, 18, 24]
    best_step = min(losses, key=lambda sv: sv[1])[0]
    assert checkpoint_step(Path("weights/loss/best.pt")) == best_step
    with pytest.raises(KeyError):  # no BLEU was decoded, so none was logged
        scalars(Path("runs/loss"), "valid/bleu")


def test_adam_beta2_reaches_the_optimizer(corpus: Path) -> None:
    trainer = run_logged(corpus, "beta2", "train.max_steps=1", "train.adam_beta2=0.999")
    assert trainer.optimizer.param_groups[0]["betas"] == (0.9, 0.999)
    with pytest.raises(ConfigError, match=r"train\.adam_beta2 must be in \(0, 1\), got 1"):
        run_logged(corpus, "beta2_bad", "train.max_steps=1", "train.adam_beta2=1")
