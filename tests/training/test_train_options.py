"""Options of the train: section and the device choice, each shown to take effect."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from helpers import ROOT, scalars

from translator import device as device_module
from translator.config import Config, TrainConfig
from translator.data.prepare import prepare_data
from translator.device import resolve_device
from translator.errors import ConfigError
from translator.model.transformer import build_model
from translator.run.paths import RunPaths
from translator.training import trainer as train_module
from translator.training.train import train_command
from translator.training.trainer import Trainer, learning_rate

TINY = ROOT / "configs" / "tiny.yaml"


def run(corpus: Path, name: str, *extra: str) -> Trainer:
    overrides = [f"data.source={corpus}", "train.epochs=100", "train.log_every=1", *extra]
    return train_command(TINY, overrides, name, None, "cpu")


def checkpoint_step(path: Path) -> int:
    return int(torch.load(path, weights_only=True)["progress"]["step"])


def test_constant_schedule_and_zero_warmup() -> None:
    constant = TrainConfig(lr=1e-3, warmup_steps=10, schedule="constant")
    assert [learning_rate(s, constant) for s in (0, 4, 9)] == pytest.approx([1e-4, 5e-4, 1e-3])
    assert {learning_rate(s, constant) for s in range(10, 500)} == {1e-3}
    flat = TrainConfig(lr=1e-3, warmup_steps=0, schedule="constant")
    assert {learning_rate(s, flat) for s in range(500)} == {1e-3}
    decay = TrainConfig(lr=1e-3, warmup_steps=0)  # inverse square root from the first step
    assert [learning_rate(s, decay) for s in (0, 3, 99)] == pytest.approx([1e-3, 5e-4, 1e-4])


def test_best_metric_bleu_keeps_the_checkpoint_of_the_highest_bleu(corpus: Path) -> None:
    trainer = run(
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
    run(corpus, "loss", "train.max_steps=24", "train.eval_every=6", "train.eval_bleu=false")
    losses = scalars(Path("runs/loss"), "valid/loss")
    assert [s for s, _ in losses] == [6, 12, 18, 24]
    best_step = min(losses, key=lambda sv: sv[1])[0]
    assert checkpoint_step(Path("weights/loss/best.pt")) == best_step
    with pytest.raises(KeyError):  # no BLEU was decoded, so none was logged
        scalars(Path("runs/loss"), "valid/bleu")


@pytest.mark.parametrize(
    ("cuda", "mps", "expected"), [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")]
)
def test_device_choice_follows_what_torch_reports(
    monkeypatch: pytest.MonkeyPatch, cuda: bool, mps: bool, expected: str
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert resolve_device(None).type == expected
    assert resolve_device("cpu").type == "cpu"
    for name, there in (("cuda", cuda), ("mps", mps)):
        if there:
            assert resolve_device(name).type == name
        else:
            with pytest.raises(ConfigError, match=f"--device {name}: .* use --device cpu"):
                resolve_device(name)


def test_unknown_device_and_bf16_on_a_gpu_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="--device tpu: expected cpu, cuda or mps"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    cuda = torch.device("cuda")
    assert device_module.autocast_dtype("auto", cuda) is None
    with pytest.raises(ConfigError, match="this GPU does not support bf16; use fp32"):
        device_module.autocast_dtype("bf16", cuda)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert device_module.autocast_dtype("auto", cuda) is torch.bfloat16


def test_word_dropout_turns_only_real_source_tokens_into_unk() -> None:
    from translator.data.batching import collate
    from translator.specials import EOS_ID, PAD_ID, SOS_ID, UNK_ID
    from translator.training.noise import drop_source_tokens

    items = [
        {
            "encoder_input": [SOS_ID, *range(10, 10 + n), EOS_ID],
            "decoder_input": [SOS_ID, 7, 8],
            "label": [7, 8, EOS_ID],
        }
        for n in (40, 25, 3)
    ]
    batch = collate(items)
    torch.manual_seed(0)
    noised = drop_source_tokens(batch, 0.3)
    changed = noised.src != batch.src
    assert torch.equal(noised.tgt_in, batch.tgt_in) and torch.equal(noised.tgt_out, batch.tgt_out)
    assert (noised.src[changed] == UNK_ID).all()
    for special in (PAD_ID, SOS_ID, EOS_ID):
        assert not changed[batch.src == special].any()
    real = int((batch.src >= 10).sum())
    assert 0.15 * real < int(changed.sum()) < 0.45 * real  # about 30% of the 68 real tokens
    assert torch.equal(drop_source_tokens(batch, 0.0).src, batch.src)


def test_word_dropout_noises_training_steps_only_and_resumes_exactly(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from translator.training import noise

    seen: list[int] = []
    real = noise.drop_source_tokens

    def counted(batch, rate):  # type: ignore[no-untyped-def]
        seen.append(batch.src.shape[0])
        return real(batch, rate)

    monkeypatch.setattr(train_module, "drop_source_tokens", counted)
    common = ("train.word_dropout=0.2", "train.batch_tokens=256", "train.checkpoint_every=1000")
    straight = run(corpus, "wd_straight", "train.max_steps=8", "train.eval_every=4", *common)
    assert len(seen) == 8  # one per step: evaluation at step 4 and 8 draws none
    plain = run(corpus, "wd_plain", "train.max_steps=8", "train.eval_every=0",
                "train.batch_tokens=256", "train.checkpoint_every=1000")  # fmt: skip
    assert straight.losses != plain.losses
    train_command(TINY, [f"data.source={corpus}", "train.epochs=100", "train.max_steps=3",
                         "train.eval_every=4", *common], "wd_split", None, "cpu")  # fmt: skip
    resumed = train_command(TINY, ["train.max_steps=8"], "wd_split", "latest", "cpu")
    assert resumed.losses == straight.losses[3:]


def test_adam_beta2_reaches_the_optimizer(corpus: Path) -> None:
    trainer = run(corpus, "beta2", "train.max_steps=1", "train.adam_beta2=0.999")
    assert trainer.optimizer.param_groups[0]["betas"] == (0.9, 0.999)
    with pytest.raises(ConfigError, match=r"train\.adam_beta2 must be in \(0, 1\), got 1"):
        run(corpus, "beta2_bad", "train.max_steps=1", "train.adam_beta2=1")
