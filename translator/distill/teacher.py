"""The teacher of a distillation: a run (its checkpoint as `translate` would choose it) or an
exported model directory, who it is (a digest of its weights), and a function that translates
with it.

A run teacher translates through CTranslate2 when it is installed: exported once (int8 by
default) into the distillation cache, keyed by the checkpoint's digest, and reused. Without
CTranslate2 it translates with PyTorch.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from translator.config import Config, DecodeConfig, config_from_dict
from translator.durable import (
    file_digest,
    publish_dir,
    publish_text,
    remove_dir,
    remove_stale_temps,
    temp_name,
)
from translator.errors import CheckpointError, TranslatorError
from translator.export.engine import META_FILE as EXPORT_META
from translator.jsonfile import read_json_object
from translator.metrics import Logger
from translator.run.lineage import RunCheckpoint, find_run_checkpoint
from translator.run.lock import run_lock

log = logging.getLogger("translator")

Translate = Callable[[list[str]], list[str]]
CACHE_RECORD = "cache.json"
"""In an exported teacher in the cache: each file's size and SHA-256, written last."""


@dataclass(frozen=True)
class Teacher:
    """A model whose translations a student learns."""

    kind: str
    """`run` (a checkpoint and its run's tokenizers) or `export` (a CTranslate2 directory)."""
    weights: RunCheckpoint
    """Which weights: the run's checkpoint, or the exported directory (no checkpoint, the
    digest of its model.bin). The distilled corpus is keyed by their digest, so new weights
    never reuse an old teacher's translations."""
    config: Config

    @property
    def name(self) -> str:
        return self.weights.name

    @property
    def path(self) -> Path:
        """The run directory, or the exported model directory."""
        return self.weights.run_dir

    @property
    def checkpoint(self) -> Path | None:
        return self.weights.checkpoint

    @property
    def step(self) -> int:
        return self.weights.step

    @property
    def digest(self) -> str:
        return self.weights.digest

    def record(self) -> dict[str, Any]:
        """What teacher.json says in the student's run directory."""
        return self.weights.record("teacher", kind=self.kind)

    def describe(self) -> str:
        return self.weights.describe()


def find_teacher(given: str, weights_root: Path) -> Teacher:
    """`--teacher`: an exported model directory, a checkpoint file, a run directory or a run name
    under `weights_root`. Anything else is one line saying what was looked for."""
    path = Path(given).expanduser()
    if path.is_dir() and (path / EXPORT_META).is_file():
        return _exported_teacher(path)
    key = f"--teacher {given}"
    todo = "train or export the teacher first, or give the path of its run or exported model"
    run_dir = path if path.is_dir() else weights_root / given
    if run_dir.is_dir() and not any(run_dir.glob("*.pt")):
        raise CheckpointError(
            f"{key}: {run_dir} holds neither a checkpoint (*.pt) nor an exported model "
            f"({EXPORT_META}); give a trained run or a directory written by `translator export`"
        )
    unreadable = "; give a trained run or an exported model directory"
    found = find_run_checkpoint(given, weights_root, key, todo, "teacher", unreadable)
    try:
        config = config_from_dict(found.state["config"], origin=f"{found.checkpoint} (config)")
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"{key}: not a checkpoint of a translator run ({exc}); give a run or an exported "
            "model directory"
        ) from None
    finally:
        found.forget_state()  # it translates from the file, loaded again
    return Teacher("run", found, config)


def _exported_teacher(path: Path) -> Teacher:
    try:
        meta = json.loads((path / EXPORT_META).read_text(encoding="utf-8"))
        config = config_from_dict(meta["config"], origin=str(path / EXPORT_META))
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(
            f"--teacher {path}: {EXPORT_META} is not readable ({exc}); export the model again"
        ) from None
    weights = path / "model.bin"
    if not weights.is_file():
        raise CheckpointError(f"--teacher {path}: no model.bin there; export the model again")
    name = str(meta.get("run", path.name))
    step = int(meta.get("step", 0))
    return Teacher("export", RunCheckpoint(name, path, None, step, file_digest(weights)), config)


def announce_teacher(teacher: Teacher, logger: Logger) -> None:
    """Say that the student learns the teacher's translations: on the terminal, and as its
    teacher.json record in TensorBoard's text."""
    record = teacher.record()
    log.info(
        "distilled: trained on the translations of teacher %s (step %s)",
        record["teacher"],
        record["step"],
    )
    lines = "\n".join(f"- {k}: `{v}`" for k, v in record.items())
    logger.text("run/teacher", f"trained on a teacher's translations:\n\n{lines}", 0)


def teacher_decoding(teacher: Teacher, student: Config) -> DecodeConfig:
    """The teacher's own decoding, with the student config's `distill.beam` and `distill.mbr`."""
    decode = teacher.config.decode
    if student.distill.beam is not None:
        decode = replace(decode, beam=student.distill.beam)
    if student.distill.mbr is not None:
        decode = replace(decode, mbr=student.distill.mbr)
    return decode


def teacher_engine(teacher: Teacher, student: Config) -> str:
    """How the teacher will translate: `ctranslate2` (an export, or a run exported with
    `distill.quantization`) or `torch` (no CTranslate2 here, or a model it cannot hold). Part of
    the corpus's key: the two engines' outputs may differ in a few words."""
    from translator.export.convert import check_exportable
    from translator.export.engine import import_ctranslate2

    try:
        import_ctranslate2()
    except TranslatorError:
        if teacher.kind == "export":
            raise
        log.info("CTranslate2 is not installed: the teacher translates with PyTorch (slower)")
        return "torch"
    if teacher.kind == "export":
        return "ctranslate2"
    try:
        check_exportable(teacher.config.model)
    except TranslatorError as exc:
        log.info("the teacher cannot be exported (%s): it translates with PyTorch", exc)
        return "torch"
    return f"ctranslate2 {student.distill.quantization}"


def open_teacher(
    teacher: Teacher,
    engine: str,
    decode: DecodeConfig,
    student: Config,
    cache: Path,
    device: str | None,
) -> tuple[Translate, str]:
    """A function translating sentences with the teacher under `decode` on `engine`
    (`teacher_engine`), and the engine's name as the terminal shows it."""
    if engine == "torch":
        return _torch_teacher(teacher, decode, device), "PyTorch"
    from translator.export.engine import load_exported, translate_exported

    path = teacher.path
    if teacher.kind == "run":
        path = _exported_copy(teacher, student.distill.quantization, cache)
    model = load_exported(path)
    model.config = replace(model.config, decode=decode)
    name = f"CTranslate2 {model.arithmetic}"
    return (lambda sentences: translate_exported(model, sentences)), name


def _exported_copy(teacher: Teacher, quantization: str, cache: Path) -> Path:
    """The run teacher exported for CTranslate2, made once per checkpoint and quantization:
    exported into a folder of this process's own, proved whole (cache.json: each file's size
    and SHA-256), then renamed into place under a lock (two students of one teacher: the second
    waits, then uses it). A cached folder is checked the same way at each use."""
    assert teacher.checkpoint is not None
    path = cache / "teachers" / f"{teacher.digest[:24]}-{quantization}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with run_lock(path.parent, f"the teacher export {path}", wait=True, file=f".{path.name}.lock"):
        if _whole_export(path):
            return path
        log.info("exporting the teacher for CTranslate2 (%s) to %s", quantization, path)
        _export_into_place(teacher, quantization, path)
    return path


def _whole_export(path: Path) -> bool:
    """Whether the cached export at `path` is the one written; a damaged one is removed (to be
    exported again), saying so."""
    if not path.exists():
        return False
    record = read_json_object(path / CACHE_RECORD) if (path / CACHE_RECORD).is_file() else None
    files = record.get("files") if record is not None else None
    problem = None if isinstance(files, dict) else "no readable cache.json: cut short, or older"
    for name, want in (files or {}).items():
        file = path / name
        if problem is not None:
            break
        if not isinstance(want, dict) or not file.is_file():
            problem = f"{name} is missing"
        elif file.stat().st_size != want.get("size") or file_digest(file) != want.get("sha256"):
            problem = f"{name} differs from what was written"
    if problem is None:
        return True
    log.warning("the exported teacher %s is damaged (%s): exporting it again", path, problem)
    remove_dir(path)
    return False


def _export_into_place(teacher: Teacher, quantization: str, path: Path) -> None:
    import torch

    from translator.export.convert import export_model
    from translator.inference.predict import load_model

    assert teacher.checkpoint is not None
    remove_stale_temps(path)  # of exports killed mid-way
    work = temp_name(path)
    try:
        loaded = load_model(teacher.checkpoint, teacher.path, torch.device("cpu"))
        export_model(loaded, work / "model", quantization)
        files = {
            f.name: {"size": f.stat().st_size, "sha256": file_digest(f)}
            for f in sorted((work / "model").iterdir())
            if f.is_file()
        }
        record = {"checkpoint": str(teacher.checkpoint), "sha256": teacher.digest, "files": files}
        publish_text(work / "model" / CACHE_RECORD, json.dumps(record, indent=1) + "\n")
        if not publish_dir(work / "model", path):  # cannot be, under the lock; kept if so
            log.info("the exported teacher %s was made by another process meanwhile", path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _torch_teacher(teacher: Teacher, decode: DecodeConfig, device: str | None) -> Translate:
    from translator.device import resolve_device
    from translator.inference.predict import load_model, translate_sentences

    if teacher.checkpoint is None:
        raise CheckpointError(f"--teacher {teacher.path}: an exported model needs CTranslate2")
    loaded = load_model(teacher.checkpoint, teacher.path, resolve_device(device))
    loaded.config = replace(loaded.config, decode=decode)
    return lambda sentences: translate_sentences(loaded, sentences)
