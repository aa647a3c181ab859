"""A run's training state (training/state.py): a resume from a checkpoint that does not fit the run
names the file and what differs."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, make_pairs, write_jsonl

from translator.errors import CheckpointError
from translator.training.train import train_command

TINY = ROOT / "configs" / "tiny.yaml"


def assert_one_line(exc: pytest.ExceptionInfo, *parts: str) -> None:
    message = str(exc.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message


def test_resume_from_a_checkpoint_that_does_not_fit_names_the_file(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", make_pairs(300))
    base = ["train.max_steps=2", "train.eval_every=0"]
    train_command(TINY, [f"data.source={corpus}", *base], "a", None, "cpu")
    ckpt = Path("weights/a/latest.pt")

    # Another vocabulary: the same toy language in capitals.
    other = write_jsonl(
        tmp_path / "other.jsonl", [(s.upper(), t.upper()) for s, t in make_pairs(300)]
    )
    with pytest.raises(CheckpointError) as exc:
        train_command(TINY, [f"data.source={other}", *base], "b", str(ckpt), "cpu")
    assert_one_line(exc, str(ckpt), "src vocabulary differs", "belongs to another run")

    # Another model shape.
    with pytest.raises(CheckpointError) as exc:
        train_command(
            TINY, [f"data.source={corpus}", "model.d_ff=128", *base], "c", str(ckpt), "cpu"
        )
    assert_one_line(exc, str(ckpt), "model shape does not match the config")
