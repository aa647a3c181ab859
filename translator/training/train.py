"""`translator train`: build everything from the config, then train (or resume) a run."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import torch

from translator.config import Config, load_config, save_config
from translator.data.prepare import data_summary, prepare_data
from translator.data.read import Pair
from translator.data.testsets import encode_eval_sets, read_eval_sets
from translator.device import autocast_dtype, resolve_device
from translator.errors import CheckpointError, ConfigError
from translator.metrics import Logger, NullLogger, TensorBoardLogger
from translator.model.transformer import build_model, count_parameters
from translator.run.branch import set_aside_later
from translator.run.checkpoint import load_checkpoint
from translator.run.lineage import RunCheckpoint, write_parent_record
from translator.run.lock import run_lock
from translator.run.names import IMPORTED
from translator.run.paths import RunPaths
from translator.training.adapt import (
    adapted_config,
    announce_parent,
    load_parent_weights,
    start_from_parent,
)
from translator.training.distributed import (
    barrier,
    current_rank,
    init_distributed,
    launched_by_torchrun,
    shutdown,
)
from translator.training.trainer import Trainer

log = logging.getLogger("translator")


def train_command(
    config_path: Path | None,
    overrides: list[str],
    run: str | None,
    resume: str | None,
    device_name: str | None,
    runs_root: Path = Path("runs"),
    weights_root: Path = Path("weights"),
) -> Trainer:
    """`translator train`: the run's config from the file and `--set`, then `train_run`."""
    if run is None and config_path is None:
        raise ConfigError("train: give --config PATH (and/or --run NAME to resume a run)")
    paths = RunPaths.create(run or Path(config_path).stem, runs_root, weights_root)
    if resume is not None:  # before the config: a resume's base is the run's own config
        checked_resume(paths, resume)
    config, parent = resolved_config(config_path, overrides, paths, resume, weights_root)
    return train_run(config, paths, resume, device_name, parent)


def resolved_config(
    config_path: Path | None,
    overrides: list[str],
    paths: RunPaths,
    resume: str | None,
    weights_root: Path,
) -> tuple[Config, RunCheckpoint | None]:
    """The run's config and the run it starts from (`train.init_from`, on a fresh start).

    On resume the run's own resolved config is the base; `--set` may still change it (max_steps).
    """
    base = paths.config if resume is not None and paths.config.is_file() else config_path
    config = load_config(base, overrides)  # a rejected config creates nothing
    if config.train.init_from is not None and resume is None:
        return adapted_config(config_path, overrides, weights_root)
    return config, None


def train_run(
    config: Config,
    paths: RunPaths,
    resume: str | None,
    device_name: str | None,
    parent: RunCheckpoint | None = None,
    *,
    locked: Callable[[RunPaths, bool], None] | None = None,
    announce: Callable[[Logger], None] | None = None,
    another: str = "start another",
) -> Trainer:
    """Train a run from its resolved config: afresh, from `parent`, or resumed (`resume`).

    Under torchrun, every process runs this; rank 0 alone prepares the data, logs and saves.
    `locked(paths, resuming)` is called by rank 0 once it holds the run's lock and a fresh start
    has cleared what an earlier attempt left: what a caller writes into the run goes there
    (distill's teacher.json). `announce(logger)` is called once the run's logger is open, before
    the parent is announced: what a caller says of the run (distill: its teacher). `another`
    ends the refusal of a fresh start on a run that has checkpoints ("... with --run NEW_NAME").
    """
    if launched_by_torchrun():
        init_distributed(resolve_device(device_name))
    try:
        eval_sets = read_eval_sets(config)  # a bad file fails before anything is written
        if not current_rank().is_main:  # rank 0 holds the run's lock for the whole job
            return _train_run(
                config, paths, resume, device_name, parent, eval_sets, announce=announce,
                another=another,
            )  # fmt: skip
        paths.make()
        with run_lock(paths.weights_dir, paths.name):
            return _train_run(
                config, paths, resume, device_name, parent, eval_sets, locked, announce, another
            )
    finally:
        shutdown()


def checked_resume(
    paths: RunPaths, resume: str | None, another: str = "start another"
) -> Path | None:
    """The checkpoint a run resumes from (None: a fresh start), once the run's state allows it.

    `--resume` on a run with no checkpoint, and a fresh start on a run that has them, are
    refused; `another` says how to start another run instead ("start another"). A run made by
    `translator import` has weights but no training of its own to go on with: refused either way
    (before anything is written into it).
    """
    if (paths.weights_dir / IMPORTED).is_file():
        raise CheckpointError(
            f"run {paths.name!r} was imported (translator import), not trained here: there is no "
            f"training to continue; train from it with --init-from {paths.name} --run NEW_NAME"
        )
    if resume is None:
        if paths.latest.is_file():
            raise ConfigError(
                f"run {paths.name!r} already has checkpoints in {paths.weights_dir}; continue it "
                f"with --resume, or {another} with --run NEW_NAME"
            )
        return None
    if resume == "latest":
        if not paths.latest.is_file():
            raise CheckpointError(
                f"--resume: run {paths.name!r} has no checkpoint at {paths.latest}; "
                "start it without --resume"
            )
        return paths.latest
    return Path(resume)


def _train_run(
    config: Config,
    paths: RunPaths,
    resume: str | None,
    device_name: str | None,
    parent: RunCheckpoint | None = None,
    eval_sets: dict[str, list[Pair]] | None = None,
    locked: Callable[[RunPaths, bool], None] | None = None,
    announce: Callable[[Logger], None] | None = None,
    another: str = "start another",
) -> Trainer:
    """Prepare data, model and Trainer, then train; rank 0 holds the run's lock meanwhile."""
    rank = current_rank()
    resume_path = checked_resume(paths, resume, another)
    if resume_path is None and rank.is_main:  # a fresh start: nothing of an earlier attempt
        removed = paths.discard_prepared()
        if removed:
            log.info(
                "run %s starts afresh: removed what an earlier attempt of it left before its "
                "first checkpoint (%s)",
                paths.name,
                ", ".join(removed),
            )
    if locked is not None and rank.is_main:
        locked(paths, resume_path is not None)
    if parent is not None:
        start_from_parent(parent, paths, rank.is_main)
    device = resolve_device(device_name)
    if rank.distributed and device.type == "cuda":
        device = torch.device("cuda", rank.local_rank)
    torch.manual_seed(config.train.seed)

    start = time.perf_counter()
    if rank.is_main:  # tokenizers, split and encoded data are made once, then read by the others
        data = prepare_data(config, paths)
        save_config(config, paths.config)
    barrier()
    if not rank.is_main:
        data = prepare_data(config, paths)
    data.eval_sets = encode_eval_sets(
        eval_sets or {}, data.src_tokenizer, data.tgt_tokenizer, config.data.max_len
    )
    model = build_model(
        config.model,
        data.src_tokenizer.get_vocab_size(),
        data.tgt_tokenizer.get_vocab_size(),
        shared_vocab=config.tokenizer.shared,
    )
    if parent is not None:
        load_parent_weights(model, parent, data.src_tokenizer, data.tgt_tokenizer)
        parent.forget_state()
        if rank.is_main:
            write_parent_record(paths.weights_dir, parent)
    if rank.rank > 0:  # same initial weights everywhere, distinct dropout streams per rank
        torch.manual_seed(config.train.seed * 7919 + rank.rank * 104729)
    log.info(data_summary(data, config.data.weights()))
    log.info(
        "model: %s parameters; device %s%s; precision %s; run %s (events in %s)",
        f"{count_parameters(model):,}",
        device.type,
        f" x {rank.world_size} processes" if rank.distributed else "",
        "bf16" if autocast_dtype(config.train.precision, device) else "fp32",
        paths.name,
        paths.log_dir,
    )
    logger = TensorBoardLogger(paths.log_dir) if rank.is_main else NullLogger()
    if announce is not None:
        announce(logger)
    announce_parent(paths, logger, parent)
    trainer = Trainer(config, model, data, paths, device, logger)
    if resume_path is not None:
        trainer.load_state_dict(load_checkpoint(resume_path, map_location=device), resume_path)
        log.info("resumed from %s at step %d", resume_path, trainer.progress.step)
        if rank.is_main:  # an earlier checkpoint: what came after it is another branch
            moved = set_aside_later(paths.weights_dir, trainer.progress.step, resume_path)
            if moved:
                log.info("%s", moved)
    log.info("ready to train after %.1f s", time.perf_counter() - start)
    trainer.fit()
    return trainer
