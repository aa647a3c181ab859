"""A run's lineage names the exact weights it came from: `--with-parent` refuses a parent
checkpoint rewritten since (even at the same step), and a parent.json or teacher.json that is
valid JSON but incomplete or mistyped is one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, make_pairs, write_jsonl

from translator.durable import file_digest
from translator.errors import CheckpointError
from translator.run.average import average_run
from translator.run.checkpoint import AVERAGED, load_checkpoint, save_checkpoint
from translator.run.lineage import (
    PARENT_FIELDS,
    TEACHER_FIELDS,
    check_record,
    find_parent,
    find_run_checkpoint,
    read_parent_record,
    read_teacher_record,
)
from translator.training.train import train_command

TINY = ROOT / "configs" / "tiny.yaml"
QUIET = ["train.eval_every=0", "train.batch_tokens=256", "train.epochs=50"]


def one_line(exc: pytest.ExceptionInfo[BaseException], *parts: str) -> str:
    message = str(exc.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)
    return message


def test_with_parent_refuses_a_parent_average_rewritten_at_the_same_step(tmp_path: Path) -> None:
    """The parent's averaged.pt rewritten by `average --last 2` after the child started: same
    step, other weights; blending with it is refused, naming the hash that changed."""
    corpus = write_jsonl(tmp_path / "general.jsonl", make_pairs(600))
    other = write_jsonl(tmp_path / "other.jsonl", make_pairs(300, seed=7, max_words=4))
    every = ["train.checkpoint_every=2", "train.average_last=3", "train.max_steps=6"]
    train_command(TINY, [f"data.source={corpus}", *QUIET, *every], "P", None, "cpu")
    parent = tmp_path / "weights" / "P"
    started_from = load_checkpoint(parent / AVERAGED)
    child = ["train.init_from=P", "train.checkpoint_every=2", "train.average_last=2",
             "train.max_steps=4"]  # fmt: skip
    train_command(TINY, [f"data.source={other}", *QUIET, *child], "C", None, "cpu")
    run = tmp_path / "weights" / "C"

    average_run(run, 2, run / "blend.pt", with_parent=0.5)  # the parent as it was: fine
    average_run(parent, 2)  # rewrites P/averaged.pt at the same step
    rewritten = load_checkpoint(parent / AVERAGED)
    assert rewritten["progress"]["step"] == started_from["progress"]["step"]
    with pytest.raises(CheckpointError) as exc:
        average_run(run, 2, run / "blend2.pt", with_parent=0.5)
    one_line(exc, str(parent / AVERAGED), "not the checkpoint run C started from", "SHA-256")
    assert not (run / "blend2.pt").exists()


@pytest.mark.parametrize(
    ("record", "field", "what"),
    [
        ({"run": "P"}, "path", "is missing"),
        ({"run": "P", "path": "/p", "checkpoint": "/p/latest.pt", "step": "20"}, "step",
         "not an integer"),
        ({"run": "P", "path": "/p", "checkpoint": None, "step": 20}, "checkpoint", "not a string"),
        ({"run": "P", "path": "/p", "checkpoint": "/p/latest.pt", "step": 20, "sha256": 5},
         "sha256", "not a string"),
    ],
)  # fmt: skip
def test_an_incomplete_parent_record_is_one_line_naming_the_field(
    tmp_path: Path, record: dict, field: str, what: str
) -> None:
    (tmp_path / "parent.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointError) as exc:
        read_parent_record(tmp_path)
    one_line(exc, str(tmp_path / "parent.json"), repr(field), what)


def test_an_incomplete_teacher_record_is_one_line_naming_the_field(tmp_path: Path) -> None:
    record = {"teacher": "T", "kind": "run", "path": "/t", "checkpoint": None, "step": 8}
    (tmp_path / "teacher.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointError) as exc:
        read_teacher_record(tmp_path)
    one_line(exc, str(tmp_path / "teacher.json"), "'sha256'", "is missing")
    (tmp_path / "teacher.json").write_text(json.dumps({**record, "sha256": "ab", "step": True}))
    with pytest.raises(CheckpointError) as exc:
        read_teacher_record(tmp_path)
    one_line(exc, "'step'", "not an integer")


def test_a_parent_and_a_teacher_are_one_lookup_and_one_record(tmp_path: Path) -> None:
    """A run's checkpoint is found, recorded and refused alike as a parent and as a teacher:
    the records differ only in their name fields, and a run without its tokenizers is one line
    naming the role."""
    import torch

    run = tmp_path / "weights" / "R"
    run.mkdir(parents=True)
    state = {"model": {"w": torch.zeros(3)}, "optimizer": {}, "progress": {"step": 7},
             "rng": {}, "config": {}, "tokenizers": {}}  # fmt: skip
    save_checkpoint(state, run / "latest.pt")
    for side in ("src", "tgt"):
        (run / f"tokenizer_{side}.json").write_text("{}")
    parent = find_parent("R", tmp_path / "weights")
    teacher = find_run_checkpoint("R", tmp_path / "weights", "--teacher R", "", "teacher")
    weights = {"path": str(run.resolve()), "checkpoint": str((run / "latest.pt").resolve()),
               "step": 7, "sha256": file_digest(run / "latest.pt")}  # fmt: skip
    assert parent.record("run") == {"run": "R", **weights}
    assert teacher.record("teacher", kind="run") == {"teacher": "R", "kind": "run", **weights}
    check_record(parent.record("run"), PARENT_FIELDS, run / "parent.json")
    check_record(teacher.record("teacher", kind="run"), TEACHER_FIELDS, run / "teacher.json")
    assert parent.describe() == teacher.describe() == f"R ({run / 'latest.pt'}, step 7)"
    (run / "tokenizer_tgt.json").unlink()
    with pytest.raises(CheckpointError) as exc:
        find_run_checkpoint("R", tmp_path / "weights", "--teacher R", "", "teacher")
    one_line(exc, "--teacher R: the teacher has no tokenizers", "tokenizer_tgt.json missing")
