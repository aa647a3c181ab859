"""A run made from another run (`train.init_from`) or taught by one (`translator distill`):
finding that run's checkpoint with its files, and the records a run keeps of where it came from
(parent.json; teacher.json for a distilled run).

A parent or a run teacher is read only through here (`RunCheckpoint`): its checkpoint (the one
`translate` would choose, or the file named), its tokenizers and its step. Nothing else reaches
into another run's folder.

A record names the exact weights: the SHA-256 of the checkpoint file the run started from (or
whose translations it learns), so a parent or teacher rewritten since, even at the same step, is
told apart. Records are read through one checked schema: a missing or mistyped field is one line
naming the file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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
class RunCheckpoint:
    """A checkpoint with its run, as a run made from it names it: its parent (`train.init_from`)
    or its distillation teacher. Which run, which file, at which step, the exact weights, and the
    checkpoint as loaded."""

    name: str
    run_dir: Path
    """The run's directory, its tokenizers beside the checkpoint (for a teacher given as an
    exported model: that model's directory)."""
    checkpoint: Path | None
    """The checkpoint file; None for an exported model, whose weights are in `run_dir`."""
    step: int
    digest: str
    """SHA-256 of the weights (the checkpoint file; an export's model.bin): the exact weights a
    child starts from or a student learns the translations of."""
    state: dict[str, Any] = field(default_factory=dict, repr=False)
    """The checkpoint as loaded; `forget_state` lets it go once what is needed is taken."""

    def forget_state(self) -> None:
        """Free the checkpoint's tensors (and optimizer state) once the weights are taken."""
        self.state.clear()

    def tokenizer(self, side: str) -> Path:
        return tokenizer_file(self.run_dir, side)

    def copy_tokenizers(self, run_dir: Path) -> None:
        """The run's tokenizer files into `run_dir`, byte for byte, each written whole."""
        for side in SIDES:
            publish_copy(self.tokenizer(side), tokenizer_file(run_dir, side))

    def record(self, name_key: str, **more: Any) -> dict[str, Any]:
        """A lineage record, enough to follow it from the run directories alone: the name under
        `name_key` (parent.json: `run`; teacher.json: `teacher`, then its `kind` in `more`),
        then where the weights are, their step and their SHA-256."""
        return {
            name_key: self.name,
            **more,
            "path": str(self.run_dir.resolve()),
            "checkpoint": str(self.checkpoint.resolve()) if self.checkpoint else None,
            "step": self.step,
            "sha256": self.digest,
        }

    def describe(self) -> str:
        where = self.checkpoint if self.checkpoint is not None else self.run_dir
        return f"{self.name} ({where}, step {self.step:,})"


MADE_BY = {"parent": "child", "teacher": "student"}
"""What each role's run makes: the words of `find_run_checkpoint`'s errors."""


def find_run_checkpoint(
    given: str, weights_root: Path, key: str, todo: str, role: str, unreadable: str = ""
) -> RunCheckpoint:
    """The checkpoint `given` names (a checkpoint file, a run directory, or a run name under
    `weights_root`), loaded, with its SHA-256 and its run's tokenizers beside it. Every way it
    can fail is one line starting with `key` and naming the run by its `role` (a key of
    MADE_BY); `todo` says what to do when nothing of that name exists, `unreadable` (appended)
    when the file is not a readable checkpoint."""
    checkpoint, run_dir = locate_run(given, weights_root, key, todo)
    try:
        digest = file_digest(checkpoint)  # before the load: the weights read are these or newer
        state = load_checkpoint(checkpoint)
    except CheckpointError as exc:
        raise CheckpointError(f"{key}: {exc}{unreadable}") from None
    except OSError as exc:
        raise CheckpointError(f"{key}: cannot read {checkpoint}: {exc.strerror or exc}") from None
    if file_digest(checkpoint) != digest:
        raise CheckpointError(
            f"{key}: {checkpoint} was rewritten while it was read (the {role} is training or "
            f"being averaged); start the {MADE_BY[role]} again once the {role}'s run has finished"
        )
    step = int(state.get("progress", {}).get("step", 0))
    found = RunCheckpoint(run_dir.resolve().name, run_dir, checkpoint, step, digest, state)
    missing = [str(found.tokenizer(s)) for s in SIDES if not found.tokenizer(s).is_file()]
    if missing:
        raise CheckpointError(
            f"{key}: the {role} has no tokenizers ({', '.join(missing)} missing); a model is "
            f"read with its vocabulary: copy the {role}'s whole run directory"
        )
    return found


def find_parent(init_from: str, weights_root: Path) -> RunCheckpoint:
    """The parent named by `train.init_from`: a checkpoint file, a run directory, or a run name
    under `weights_root`. Every way it can fail is one line naming what to fix."""
    key = f"train.init_from {init_from!r}"
    todo = "train the parent first, or give the path of its directory or checkpoint"
    return find_run_checkpoint(init_from, weights_root, key, todo, "parent")


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


def write_parent_record(run_dir: Path, parent: RunCheckpoint) -> None:
    """Write parent.json whole."""
    _write_record(run_dir / PARENT_RECORD, parent.record("run"))


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
