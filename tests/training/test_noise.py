"""Word dropout (training/noise.py, train.word_dropout): only real source tokens become [UNK], on
training steps only, and a resume replays it exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import ROOT

from translator.training import trainer as train_module
from translator.training.train import train_command
from translator.training.trainer import Trainer

TINY = ROOT / "configs" / "tiny.yaml"


def run_logged(corpus: Path, name: str, *extra: str) -> Trainer:
    overrides = [f"data.source={corpus}", "train.epochs=100", "train.log_every=1", *extra]
    return train_command(TINY, overrides, name, None, "cpu")


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
    straight = run_logged(corpus, "wd_straight", "train.max_steps=8", "train.eval_every=4", *common)
    assert len(seen) == 8  # one per step: evaluation at step 4 and 8 draws none
    plain = run_logged(corpus, "wd_plain", "train.max_steps=8", "train.eval_every=0",
                       "train.batch_tokens=256", "train.checkpoint_every=1000")  # fmt: skip
    assert straight.losses != plain.losses
    train_command(TINY, [f"data.source={corpus}", "train.epochs=100", "train.max_steps=3",
                         "train.eval_every=4", *common], "wd_split", None, "cpu")  # fmt: skip
    resumed = train_command(TINY, ["train.max_steps=8"], "wd_split", "latest", "cpu")
    assert resumed.losses == straight.losses[3:]
