"""A Trainer's state as a checkpoint holds it, and its restoration on resume."""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from translator.config import Config, TrainConfig
from translator.data.batching import (
    TokenBatchSampler,
    drop_examples,
    examples_consumed,
    split_evenly,
)
from translator.data.prepare import PreparedData
from translator.data.tokenizer import fingerprint
from translator.errors import CheckpointError
from translator.model.transformer import Transformer
from translator.run.paths import RunPaths
from translator.training.distributed import Rank
from translator.training.ema import WeightAverage

log = logging.getLogger("translator")


@dataclass
class Progress:
    """Where training is: restored from a checkpoint on resume."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_valid_loss: float = math.inf
    best_bleu: float = -math.inf
    tokens_seen: int = 0
    """Real target tokens trained on, all ranks together."""
    skipped_steps: int = 0
    time_fraction: float = 0.0
    """The share of the train.max_minutes budget used, which linear/cosine schedules follow."""
    epoch_offset: int = 0
    """Examples of this epoch used before a resume with another number of processes; the
    epoch's remaining batches are made from the examples after them."""


class Trainer(Protocol):
    """What saving and restoring read and set of the Trainer (training/trainer.py), which this
    module must not import: the Trainer imports it."""

    config: Config
    cfg: TrainConfig
    model: Transformer
    optimizer: torch.optim.Optimizer
    data: PreparedData
    paths: RunPaths
    rank: Rank
    sampler: TokenBatchSampler
    progress: Progress
    ema: WeightAverage | None


def trainer_state(trainer: Trainer) -> dict[str, Any]:
    """Everything a resume needs: weights, optimizer, progress, RNG, config, vocabularies."""
    p = trainer.progress
    return {
        "model": trainer.model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "progress": {**dataclasses.asdict(p), "world_size": trainer.rank.world_size},
        "rng": {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        },
        **({"ema": trainer.ema.state_dict()} if trainer.ema is not None else {}),
        "config": trainer.config.to_dict(),
        "tokenizers": {
            "src": fingerprint(trainer.data.src_tokenizer),
            "tgt": fingerprint(trainer.data.tgt_tokenizer),
        },
    }


def restore_trainer(trainer: Trainer, state: dict[str, Any], where: Path) -> None:
    """Restore weights, optimizer, progress and RNG; a foreign checkpoint is one clear error."""
    if state.get("weights_only"):
        raise CheckpointError(
            f"{where}: holds weights only (an averaged or step checkpoint), no optimizer state to "
            "resume from; resume from the run's latest.pt"
        )
    try:
        _restore(trainer, state, where)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(
            f"{where}: incomplete or foreign checkpoint ({type(exc).__name__}: {exc}); "
            "use another checkpoint of the run"
        ) from None


def _restore(trainer: Trainer, state: dict[str, Any], where: Path) -> None:
    for side, tok in (("src", trainer.data.src_tokenizer), ("tgt", trainer.data.tgt_tokenizer)):
        if state["tokenizers"][side] != fingerprint(tok):
            raise CheckpointError(
                f"{where}: its {side} vocabulary differs from {trainer.paths.tokenizer(side)}; "
                "the checkpoint belongs to another run"
            )
    try:
        trainer.model.load_state_dict(state["model"])
    except RuntimeError as exc:
        first = str(exc).splitlines()[1].strip() if "\n" in str(exc) else str(exc)
        raise CheckpointError(f"{where}: model shape does not match the config ({first})") from None
    trainer.optimizer.load_state_dict(state["optimizer"])
    if trainer.ema is not None:
        if "ema" in state:
            trainer.ema.load_state_dict(state["ema"])
        else:  # a run that starts averaging on resume starts from the weights it resumes with
            trainer.ema.restart()
            log.info("%s holds no weight average (train.ema_decay): it starts here", where)
    progress = dict(state["progress"])
    saved_world = progress.pop("world_size", 1)
    if saved_world != trainer.rank.world_size:
        _carry_position_over(trainer, progress, saved_world)
    trainer.progress = Progress(**progress)
    # RNG states are CPU byte tensors, whatever device the checkpoint was mapped to on loading.
    torch.set_rng_state(state["rng"]["torch"].cpu())
    if state["rng"]["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["rng"]["cuda"]])
    if trainer.rank.rank > 0:  # distinct dropout streams per rank
        torch.manual_seed(
            trainer.cfg.seed * 7919 + trainer.rank.rank * 104729 + trainer.progress.step
        )


def _carry_position_over(trainer: Trainer, progress: dict[str, Any], saved_world: int) -> None:
    """Continue the epoch with the very examples that `saved_world` processes had not used yet.

    The ranks of a run take its batches in turn, so the examples used so far are a prefix of the
    epoch's sequence of examples, the same for every number of processes.
    """
    epoch, world = progress["epoch"], trainer.rank.world_size
    batches = trainer.sampler.batches(epoch)
    used = examples_consumed(
        batches, progress.get("epoch_offset", 0), progress["batch_in_epoch"], saved_world
    )
    try:
        split_evenly(drop_examples(batches, used), world)
    except ValueError:  # fewer examples left than processes
        left = sum(len(b) for b in batches) - used
        log.warning(
            "resuming with %d processes instead of %d: the last %d examples of epoch %d are too "
            "few to share out and are skipped",
            world, saved_world, left, epoch + 1,
        )  # fmt: skip
        progress.update(epoch=epoch + 1, batch_in_epoch=0, epoch_offset=0)
        return
    progress.update(batch_in_epoch=0, epoch_offset=used)
    log.info(
        "resuming with %d processes instead of %d: epoch %d continues after the %d examples "
        "already used, each of the others once",
        world, saved_world, epoch + 1, used,
    )  # fmt: skip
