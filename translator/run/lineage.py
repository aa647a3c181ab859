"""A run made from another run (`train.init_from`): finding the parent's files, and the record of
the parent that the child keeps in its own directory (parent.json).

The parent is read only through here: its checkpoint (the one `translate` would choose, or the
file named), its tokenizers and its step. Nothing else reaches into another run's folder.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from translator.errors import CheckpointError
from translator.jsonfile import read_json_object
from translator.run.checkpoint import load_checkpoint
from translator.run.paths import PARENT_RECORD, TEACHER_RECORD, locate_run

SIDES = ("src", "tgt")


@dataclass(frozen=True)
class Parent:
    """The run a new run starts from: where it is, the checkpoint taken, and that checkpoint."""

    name: str
    run_dir: Path
    checkpoint: Path
    state: dict[str, Any]
    """The checkpoint as loaded; `forget_state` lets it go once the weights are taken."""
    step: int

    def forget_state(self) -> None:
        """Free the checkpoint's tensors (and optimizer state) once the child has its weights."""
        self.state.clear()

    def tokenizer(self, side: str) -> Path:
        return self.run_dir / f"tokenizer_{side}.json"

    def copy_tokenizers(self, run_dir: Path) -> None:
        """The parent's tokenizer files into `run_dir`, byte for byte."""
        for side in SIDES:
            shutil.copyfile(self.tokenizer(side), run_dir / f"tokenizer_{side}.json")

    def record(self) -> dict[str, Any]:
        """What parent.json says: enough to follow the lineage from the run directories alone."""
        return {
            "run": self.name,
            "path": str(self.run_dir.resolve()),
            "checkpoint": str(self.checkpoint.resolve()),
            "step": self.step,
        }

    def describe(self) -> str:
        return f"run {self.name} ({self.checkpoint}, step {self.step:,})"


def find_parent(init_from: str, weights_root: Path) -> Parent:
    """The parent named by `train.init_from`: a checkpoint file, a run directory, or a run name
    under `weights_root`. Every way it can fail is one line naming what to fix."""
    key = f"train.init_from {init_from!r}"
    todo = "train the parent first, or give the path of its directory or checkpoint"
    checkpoint, run_dir = locate_run(init_from, weights_root, key, todo)
    try:
        state = load_checkpoint(checkpoint)
    except CheckpointError as exc:
        raise CheckpointError(f"{key}: {exc}") from None
    step = int(state.get("progress", {}).get("step", 0))
    parent = Parent(run_dir.resolve().name, run_dir, checkpoint, state, step)
    missing = [str(parent.tokenizer(s)) for s in SIDES if not parent.tokenizer(s).is_file()]
    if missing:
        raise CheckpointError(
            f"{key}: the parent has no tokenizers ({', '.join(missing)} missing); a model is "
            "read with its vocabulary: copy the parent's whole run directory"
        )
    return parent


def write_parent_record(run_dir: Path, parent: Parent) -> None:
    """Write parent.json atomically."""
    _write_record(run_dir / PARENT_RECORD, parent.record())


def read_parent_record(run_dir: Path) -> dict[str, Any] | None:
    """The parent a run was made from (parent.json), or None for a run trained from nothing."""
    return _read_record(run_dir / PARENT_RECORD)


def write_teacher_record(run_dir: Path, record: dict[str, Any]) -> None:
    """Write teacher.json atomically: the teacher whose translations a distilled run learns."""
    _write_record(run_dir / TEACHER_RECORD, record)


def read_teacher_record(run_dir: Path) -> dict[str, Any] | None:
    """The teacher of a distilled run (teacher.json), or None for a run trained on references."""
    return _read_record(run_dir / TEACHER_RECORD)


def _write_record(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def _read_record(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    record = read_json_object(path)
    if record is None:
        raise CheckpointError(
            f"{path} is damaged (not the JSON record written there); restore it, or delete it to "
            "let the run go on without it"
        )
    return record
