"""A run made from another run (`train.init_from`): finding the parent's files, and the records a
run keeps of where it came from (parent.json; teacher.json for a distilled run).

The parent is read only through here: its checkpoint (the one `translate` would choose, or the
file named), its tokenizers and its step. Nothing else reaches into another run's folder.

A record names the exact weights: the SHA-256 of the checkpoint file the run started from (or
whose translations it learns), so a parent or teacher rewritten since, even at the same step, is
told apart. Records are read through one checked schema: a missing or mistyped field is one line
naming the file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from translator.durable import file_digest, publish_copy, publish_text
from translator.errors import CheckpointError
from translator.jsonfile import read_json_object
from translator.run.checkpoint import load_checkpoint
from translator.run.names import tokenizer_file
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
    digest: str
    """SHA-256 of the checkpoint file: the exact weights the child starts from."""

    def forget_state(self) -> None:
        """Free the checkpoint's tensors (and optimizer state) once the child has its weights."""
        self.state.clear()

    def tokenizer(self, side: str) -> Path:
        return tokenizer_file(self.run_dir, side)

    def copy_tokenizers(self, run_dir: Path) -> None:
        """The parent's tokenizer files into `run_dir`, byte for byte, each written whole."""
        for side in SIDES:
            publish_copy(self.tokenizer(side), tokenizer_file(run_dir, side))

    def record(self) -> dict[str, Any]:
        """What parent.json says: enough to follow the lineage from the run directories alone."""
        return {
            "run": self.name,
            "path": str(self.run_dir.resolve()),
            "checkpoint": str(self.checkpoint.resolve()),
            "step": self.step,
            "sha256": self.digest,
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
        digest = file_digest(checkpoint)  # before the load: the weights read are these or newer
        state = load_checkpoint(checkpoint)
    except CheckpointError as exc:
        raise CheckpointError(f"{key}: {exc}") from None
    except OSError as exc:
        raise CheckpointError(f"{key}: cannot read {checkpoint}: {exc.strerror or exc}") from None
    if file_digest(checkpoint) != digest:
        raise CheckpointError(
            f"{key}: {checkpoint} was rewritten while it was read (the parent is training or "
            "being averaged); start the child again once the parent's run has finished"
        )
    step = int(state.get("progress", {}).get("step", 0))
    parent = Parent(run_dir.resolve().name, run_dir, checkpoint, state, step, digest)
    missing = [str(parent.tokenizer(s)) for s in SIDES if not parent.tokenizer(s).is_file()]
    if missing:
        raise CheckpointError(
            f"{key}: the parent has no tokenizers ({', '.join(missing)} missing); a model is "
            "read with its vocabulary: copy the parent's whole run directory"
        )
    return parent


PARENT_FIELDS: dict[str, tuple[type, ...]] = {
    "run": (str,),
    "path": (str,),
    "checkpoint": (str,),
    "step": (int,),
}
"""What parent.json must hold; `sha256` too from records made since it was kept (older ones are
checked by step and vocabulary only)."""
TEACHER_FIELDS: dict[str, tuple[type, ...]] = {
    "teacher": (str,),
    "kind": (str,),
    "path": (str,),
    "checkpoint": (str, type(None)),
    "step": (int,),
    "sha256": (str,),
}
"""What teacher.json must hold (`Teacher.record` in translator/distill/teacher.py writes it)."""
OPTIONAL_FIELDS: dict[str, tuple[type, ...]] = {"sha256": (str,)}


def write_parent_record(run_dir: Path, parent: Parent) -> None:
    """Write parent.json whole."""
    _write_record(run_dir / PARENT_RECORD, parent.record())


def read_parent_record(run_dir: Path) -> dict[str, Any] | None:
    """The parent a run was made from (parent.json), or None for a run trained from nothing."""
    return _read_record(run_dir / PARENT_RECORD, PARENT_FIELDS, "the run it was made from")


def write_teacher_record(run_dir: Path, record: dict[str, Any]) -> None:
    """Write teacher.json whole: the teacher whose translations a distilled run learns."""
    check_record(record, TEACHER_FIELDS, run_dir / TEACHER_RECORD)
    _write_record(run_dir / TEACHER_RECORD, record)


def read_teacher_record(run_dir: Path) -> dict[str, Any] | None:
    """The teacher of a distilled run (teacher.json), or None for a run trained on references."""
    return _read_record(run_dir / TEACHER_RECORD, TEACHER_FIELDS, "the teacher it learnt from")


def check_record(record: dict[str, Any], fields: dict[str, tuple[type, ...]], path: Path) -> None:
    """A record holding every field of `fields` with a value of its type, and the optional
    fields only with theirs; else one line naming the file and the first field wrong."""
    wanted = {**{k: v for k, v in OPTIONAL_FIELDS.items() if k in record}, **fields}
    for name, types in wanted.items():
        value = record.get(name)
        if name not in record:
            problem = "is missing"
        elif isinstance(value, bool) or not isinstance(value, types):
            problem = f"is {value!r}, not {' or '.join(_TYPE_NAMES[t] for t in types)}"
        else:
            continue
        raise CheckpointError(
            f"{path}: field {name!r} {problem}; the file was not written by this version of "
            "translator or was edited: restore it from a copy of the run, or delete it to go on "
            "without it"
        )


_TYPE_NAMES = {str: "a string", int: "an integer", type(None): "null"}


def _write_record(path: Path, record: dict[str, Any]) -> None:
    publish_text(path, json.dumps(record, indent=1) + "\n")


def _read_record(
    path: Path, fields: dict[str, tuple[type, ...]], what: str
) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    record = read_json_object(path)
    if record is None:
        raise CheckpointError(
            f"{path} is damaged (not the JSON record of {what} written there); restore it, or "
            "delete it to let the run go on without it"
        )
    check_record(record, fields, path)
    return record
