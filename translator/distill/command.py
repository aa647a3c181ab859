"""`translator distill`: a student trained on its teacher's translations (sequence-level
knowledge distillation, Kim & Rush 2016).

1. The teacher (a run or an exported model) translates the source side of each entry of the
   student's `data.source` (the teacher's own data when the student config names none), into a
   distilled corpus kept in the cache and shared by every student of that teacher on that data.
2. The student is then trained as `translator train` would train it, on those translations, each
   entry keeping its weight; `distill.keep_original` adds the original pairs, `distill.min_chrf`
   puts the reference back where a translation scores below it.
3. The student's run records its teacher (teacher.json, TensorBoard's text tab); a `--resume`
   whose teacher has other weights than the recorded ones stops, as its data would be another;
   otherwise it trains on the data it started with (its prepared store) and translates nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import torch

from translator.config import (
    Config,
    DataConfig,
    config_from_dict,
    given_settings,
    load_config,
    read_yaml,
)
from translator.data.read import resolve_sources
from translator.data.store import store_root
from translator.distill.corpus import corpus_key, distil_source
from translator.distill.filtering import filtered_pairs
from translator.distill.teacher import (
    Teacher,
    announce_teacher,
    find_teacher,
    open_teacher,
    teacher_decoding,
    teacher_engine,
)
from translator.errors import ConfigError
from translator.run.lineage import read_teacher_record, write_teacher_record
from translator.run.lock import check_run_free
from translator.run.paths import RunPaths

log = logging.getLogger("translator")


def distill_command(
    teacher_arg: str,
    config_path: Path | None,
    overrides: list[str],
    run: str | None,
    resume: str | None,
    device: str | None,
    runs_root: Path = Path("runs"),
    weights_root: Path = Path("weights"),
) -> None:
    """Translate the corpus with the teacher (or reuse it), then train the student on it."""
    if config_path is None:
        raise ConfigError("distill: give the student's --config, e.g. configs/student.yaml")
    config = load_config(config_path, overrides)  # a rejected config does nothing
    teacher = find_teacher(teacher_arg, weights_root)
    _check_languages(teacher, config, config_path)
    paths = RunPaths.create(run or config_path.stem, runs_root, weights_root)
    if paths.weights_dir.resolve() == teacher.path.resolve():
        raise ConfigError(
            f"--run {paths.name} is the teacher's own run ({teacher.path}); name the student "
            "with --run NAME"
        )
    from translator.training.train import checked_resume, resolved_config, train_run

    if resume is not None:
        _check_same_teacher(teacher, paths)
    checked_resume(paths, resume, "distill another student")  # before the corpus is translated
    recorded = _recorded_sources(paths) if resume is not None else None
    check_run_free(paths.weights_dir, paths.name)  # likewise: a run in use is refused now
    if recorded is not None:  # the run's prepared store holds its data: nothing to translate
        sources = recorded
        log.info("resuming student %s on the distilled data it started with", paths.name)
    else:
        entries = _source_entries(config, config_path, overrides, teacher)
        threads = torch.get_num_threads()
        sources = distilled_sources(teacher, config, entries, device, progress=True)
        # Loading CTranslate2 sets this process's OpenMP threads to its own (1): the student
        # then trained on one core, at 0.7x the tokens/s (bench_distill.py, 2 cores).
        torch.set_num_threads(threads)

    def record_teacher(locked_paths: RunPaths, resuming: bool) -> None:
        """Under the run's lock: the teacher checked again (resume) and recorded."""
        if resuming:
            _check_same_teacher(teacher, locked_paths)
        write_teacher_record(locked_paths.weights_dir, teacher.record())

    student, parent = resolved_config(config_path, overrides, paths, resume, weights_root)
    train_run(
        _trained_on(student, sources, str(config_path)), paths, resume, device, parent,
        locked=record_teacher, announce=lambda logger: announce_teacher(teacher, logger),
        another="distill another student",
    )  # fmt: skip


def distilled_sources(
    teacher: Teacher,
    config: Config,
    entries: list[Any],
    device: str | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """`data.source` entries for the student: each entry's distilled pairs with its weight, then
    (`distill.keep_original`) the entries themselves."""
    data = _reading_config(config, entries)
    decode = teacher_decoding(teacher, config)
    kind = teacher_engine(teacher, config)
    root = store_root(config) / "distilled"
    engine: list[Any] = []  # opened at the first corpus that needs translating, then kept

    def translate() -> Any:
        if not engine:
            translator, name = open_teacher(teacher, kind, decode, config, root, device)
            log.info(
                "teacher %s translates with %s (beam %d%s)",
                teacher.describe(),
                name,
                decode.beam,
                ", MBR" if decode.mbr and decode.beam > 1 else "",
            )
            engine.append(translator)
        return engine[0]

    out: list[dict[str, Any]] = []
    for source, weight in zip(resolve_sources(data), data.weights(), strict=True):
        key = corpus_key(teacher.digest, kind, source, data, decode)
        path, done = distil_source(
            source, data, key, root, translate, config.distill.chunk, progress
        )
        log.info("%s", _account(source.name, path, done))
        if config.distill.min_chrf > 0:
            path, record = filtered_pairs(path.parent, source, data, config.distill.min_chrf)
            log.info(
                "distill.min_chrf %g: %s of %s translations replaced by their reference",
                config.distill.min_chrf,
                f"{record['replaced']:,}",
                f"{record['pairs']:,}",
            )
        out.append({"path": str(path), "weight": weight})
    if config.distill.keep_original:
        out += [e if isinstance(e, dict) else {"path": e, "weight": 1} for e in entries]
    return out


def _account(name: str, path: Path, done: dict[str, Any]) -> str:
    if done["reused"]:
        return f"distilled {name}: {done['pairs']:,} pairs, translated before ({path})"
    rate = done["translated"] / done["seconds"] if done["seconds"] else 0.0
    resumed = f", resumed after {done['resumed_at']:,}" if done.get("resumed_at") else ""
    return (
        f"distilled {name}: {done['pairs']:,} pairs; {done['translated']:,} translated in "
        f"{done['seconds']:.0f} s ({rate:,.0f} sentences/s{resumed}) into {path}"
    )


def _reading_config(config: Config, entries: list[Any]) -> DataConfig:
    """The student's data section reading `entries` (checked: files exist, weights are valid)."""
    data = dataclasses.replace(config.data, source=entries if len(entries) > 1 else entries[0])
    data.validate()
    return data


def _trained_on(config: Config, sources: Any, origin: str) -> Config:
    """`config` training on `sources` (its data.source), checked as a config file's would be."""
    raw = config.to_dict()
    raw["data"]["source"] = sources
    return config_from_dict(raw, origin)


def _source_entries(
    config: Config, config_path: Path, overrides: list[str], teacher: Teacher
) -> list[Any]:
    """The student's `data.source` entries (weights kept), or the teacher's when the student's
    config and `--set` name none."""
    raw = given_settings(config_path, overrides)
    given = (raw.get("data") or {}).get("source") is not None
    source = config.data.source if given else teacher.config.data.source
    return list(source) if isinstance(source, list) else [source]


def _check_languages(teacher: Teacher, config: Config, config_path: Path) -> None:
    mine = (config.data.lang_src, config.data.lang_tgt)
    theirs = (teacher.config.data.lang_src, teacher.config.data.lang_tgt)
    if mine != theirs:
        raise ConfigError(
            f"{config_path}: data.lang_src/lang_tgt are {'-'.join(mine)} but the teacher "
            f"{teacher.name} translates {'-'.join(theirs)}; a student learns its teacher's "
            f"language pair: set data.lang_src: {theirs[0]} and data.lang_tgt: {theirs[1]}"
        )


def _recorded_sources(paths: RunPaths) -> Any:
    """A student being resumed trains on the data it started with, which its prepared store
    holds (even if the distilled corpus has been deleted since): its own config's data.source.
    None when the run has no store yet."""
    if not (paths.store_record.is_file() and paths.config.is_file()):
        return None
    return (read_yaml(paths.config).get("data") or {}).get("source")


def _check_same_teacher(teacher: Teacher, paths: RunPaths) -> None:
    """A resumed student keeps its teacher: other weights would make other training data."""
    recorded = read_teacher_record(paths.weights_dir)
    if recorded is not None and recorded.get("sha256") != teacher.digest:
        where = recorded.get("checkpoint") or recorded.get("path")
        raise ConfigError(
            f"--resume: run {paths.name} was distilled from {recorded.get('teacher')} (step "
            f"{recorded.get('step')}, {where}), but that teacher "
            f"now has other weights ({teacher.describe()}); resume with the teacher it had, or "
            "distill a new student with --run NEW_NAME"
        )
