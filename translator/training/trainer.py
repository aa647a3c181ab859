"""Training: the Trainer (train_step, fit, checkpoints).

Evaluation and sampling during training live in evaluation.py, signal handling in stopping.py,
the checkpoint state in state.py, and the `translator train` entry point in train.py.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from translator.config import Config
from translator.data.batching import (
    Batch,
    TokenBatchSampler,
    check_epoch_size,
    collate,
    drop_examples,
    shard_batches,
)
from translator.data.prepare import PreparedData, entry_counts, entry_names
from translator.device import autocast_dtype
from translator.errors import TranslatorError
from translator.metrics import Logger, NullLogger
from translator.model.transformer import Transformer
from translator.run.average import average_run, keep_step_checkpoint, weights_only
from translator.run.checkpoint import EMA, save_checkpoint
from translator.run.paths import RunPaths
from translator.specials import PAD_ID
from translator.training.distributed import all_reduce_sum, barrier, current_rank
from translator.training.ema import WeightAverage
from translator.training.evaluation import validate_and_sample
from translator.training.noise import drop_source_tokens
from translator.training.schedule import learning_rate
from translator.training.state import Progress, restore_trainer, trainer_state
from translator.training.stopping import StopOnSignal

log = logging.getLogger("translator")


class TrainingError(TranslatorError):
    """Training cannot go on (non-finite loss, interrupted)."""


# --------------------------------------------------------------------------- trainer


class Trainer:
    def __init__(
        self,
        config: Config,
        model: Transformer,
        data: PreparedData,
        paths: RunPaths,
        device: torch.device,
        logger: Logger | None = None,
    ) -> None:
        self.config, self.cfg = config, config.train
        self.rank = current_rank()
        self.model = model.to(device)
        # step_model runs the training forward: DDP-wrapped across ranks, optionally compiled
        self.step_model: nn.Module = self.model
        if self.rank.distributed:
            self.step_model = DistributedDataParallel(
                self.model,
                device_ids=[device] if device.type == "cuda" else None,
                forward_sync_buffers=False,  # the only buffer, the position table, is constant
            )
        if self.cfg.compile:
            self.step_model = torch.compile(self.step_model)
        self.data, self.paths, self.device = data, paths, device
        self.logger = logger or NullLogger()
        self.optimizer = torch.optim.Adam(
            model.parameters(),
            lr=self.cfg.lr,
            betas=(0.9, self.cfg.adam_beta2),
            eps=1e-9,
            weight_decay=self.cfg.weight_decay,
            fused=device.type in ("cpu", "cuda"),
        )
        self.amp_dtype = autocast_dtype(self.cfg.precision, device)
        self.ema = WeightAverage(self.model, self.cfg.ema_decay) if self.cfg.ema_decay else None
        self.progress = Progress()
        weights = config.data.weights()
        check_epoch_size(entry_counts(data, len(weights)), weights, entry_names(data))
        self.sampler = TokenBatchSampler(
            data.train.src_lengths(),
            data.train.tgt_lengths(),
            self.cfg.batch_tokens,
            self.cfg.seed,
            copies=data.train.copies,
            entries=data.train_entries,
            weights=weights,
        )
        self.stop_requested = False  # set by a signal handler
        self.stop_agreed = False  # all ranks saw a stop request before the last step
        self.time_up = False  # train.max_minutes ran out (agreed by all ranks)
        self.deadline: float | None = None  # time.monotonic() at which max_minutes runs out
        self.session_start = time.monotonic()  # reset by fit(): the start of max_minutes
        self.total_steps: int | None = None  # the step budget the schedule decays over
        self._time_fraction_start = 0.0
        self.last_step_tokens = 0  # real target tokens of the last step, all ranks together
        self.losses: list[float] = []  # per-step training losses of this process, for tests

    # ---- one step

    def autocast(self):
        if self.amp_dtype is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def batch_loss(
        self, batch: Batch, label_smoothing: float, model: nn.Module | None = None
    ) -> torch.Tensor:
        """Summed cross-entropy over the batch's real target tokens (by default, of step_model)."""
        select = batch.tgt_out != PAD_ID
        with self.autocast():
            logits = (model or self.step_model)(batch.src, batch.tgt_in, select)  # (N, V)
        return F.cross_entropy(
            logits.float(), batch.tgt_out[select], reduction="sum", label_smoothing=label_smoothing
        )

    def train_step(self, batches: list[Batch]) -> tuple[float, float]:
        """One optimizer step over `batches` (gradient accumulation); returns (loss, grad norm).

        The loss is normalised by the real target tokens of all batches together, so accumulating
        k batches equals one step on their union.
        """
        self.model.train()
        # Normalise by the real target tokens of all batches on all ranks together. DDP averages
        # gradients over ranks, hence the factor world_size. The stop flag and the share of the
        # time budget used ride along, so that every rank stops after the same step and uses the
        # same learning rate.
        local_tokens = sum(b.n_tgt_tokens for b in batches)
        out_of_time = self.deadline is not None and time.monotonic() > self.deadline
        n_tokens, stops, late, time_used = all_reduce_sum(
            [local_tokens, float(self.stop_requested), float(out_of_time), self._time_fraction()],
            self.device,
        )
        self.stop_agreed, self.time_up = stops > 0, late > 0
        self.progress.time_fraction = time_used / self.rank.world_size
        lr = learning_rate(
            self.progress.step, self.cfg, self.total_steps, self.progress.time_fraction
        )
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.last_step_tokens = int(n_tokens)
        scale = self.rank.world_size / n_tokens
        total = 0.0
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            if self.cfg.word_dropout:
                batch = drop_source_tokens(batch, self.cfg.word_dropout)
            final = i == len(batches) - 1
            with nullcontext() if final or not self.rank.distributed else self.step_model.no_sync():
                loss = self.batch_loss(batch, self.cfg.label_smoothing) * scale
                loss.backward()
            total += loss.item() / self.rank.world_size
        if self.rank.distributed:
            total = all_reduce_sum([total], self.device)[0]
        clip = self.cfg.clip_norm if self.cfg.clip_norm is not None else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
        if not (math.isfinite(total) and math.isfinite(grad_norm)):
            self.optimizer.zero_grad(set_to_none=True)
            return total, grad_norm
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.update(self.progress.step + 1)
        return total, grad_norm

    def _time_fraction(self) -> float:
        """The share of the time budget used, for the schedule. A resumed session goes on from
        the share reached before (a finished one starts again) to 1 at its own deadline."""
        if self.cfg.max_minutes is None:
            return 0.0
        elapsed = (time.monotonic() - self.session_start) / (60 * self.cfg.max_minutes)
        start = self._time_fraction_start
        return min(1.0, start + (1.0 - start) * elapsed)

    # ---- checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Everything a resume needs: weights, optimizer, progress, RNG, config, vocabularies."""
        return trainer_state(self)

    def load_state_dict(self, state: dict[str, Any], where: Path) -> None:
        """Restore weights, optimizer, progress and RNG; a foreign checkpoint is one clear error."""
        restore_trainer(self, state, where)

    def save(self, path: Path, keep_step: bool = False) -> None:
        """Write a checkpoint (rank 0 only: the weights are the same on every rank); with
        `keep_step` and train.average_last, also keep its weights as step_<N>.pt."""
        if not self.rank.is_main:
            return
        state = self.state_dict()
        save_checkpoint(state, path)
        if keep_step and self.cfg.average_last:
            keep_step_checkpoint(state, self.paths.weights_dir, self.cfg.average_last)

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """This rank's batches (lists of example indices) for `epoch`; in the current epoch,
        without the examples used before a resume with another number of processes."""
        batches = self.sampler.batches(epoch)
        if epoch == self.progress.epoch and self.progress.epoch_offset:
            batches = drop_examples(batches, self.progress.epoch_offset)
        return shard_batches(batches, self.rank.rank, self.rank.world_size)

    # ---- the loop

    def fit(self) -> Progress:
        """Train until `max_steps` or `epochs`; evaluate, sample and checkpoint along the way."""
        from tqdm import tqdm

        cfg, p = self.cfg, self.progress
        whole_epoch = shard_batches(self.sampler.batches(0), self.rank.rank, self.rank.world_size)
        steps_per_epoch = math.ceil(len(whole_epoch) / cfg.accum_steps)
        total = cfg.max_steps or cfg.epochs * steps_per_epoch
        self.total_steps = total
        self.session_start = time.monotonic()
        self._time_fraction_start = p.time_fraction if p.time_fraction < 0.999 else 0.0
        bar = tqdm(
            total=total,
            initial=p.step,
            unit="step",
            dynamic_ncols=True,
            disable=None if self.rank.is_main else True,
            file=sys.stderr,
        )
        self._window = (0, time.perf_counter())  # target tokens and start of the log window
        if cfg.max_minutes is not None:
            self.deadline = time.monotonic() + 60 * cfg.max_minutes
        with StopOnSignal(self):
            # max_steps, when set, overrides epochs
            while (
                p.step < total
                and (cfg.max_steps is not None or p.epoch < cfg.epochs)
                and not self.time_up
            ):
                batches = self.epoch_batches(p.epoch)
                while p.batch_in_epoch < len(batches) and p.step < total and not self.time_up:
                    group = batches[p.batch_in_epoch : p.batch_in_epoch + cfg.accum_steps]
                    self._fit_step(group, total, bar)
                if p.batch_in_epoch >= len(batches):
                    p.epoch, p.batch_in_epoch, p.epoch_offset = p.epoch + 1, 0, 0
        bar.close()
        self._end_of_training()
        return p

    def _fit_step(self, group: list[list[int]], total: int, bar: Any) -> None:
        """Train on one group of batches, then log, evaluate, save and stop as due."""
        p = self.progress
        loss, grad_norm = self.train_step([collate([self.data.train[i] for i in g]) for g in group])
        p.batch_in_epoch += len(group)
        self._check_finite(loss, grad_norm)
        p.step += 1
        self.losses.append(loss)
        p.tokens_seen += self.last_step_tokens
        tokens, since = self._window
        tokens += self.last_step_tokens
        if p.step % self.cfg.log_every == 0 or p.step in (1, total):
            self._log_train(bar, loss, grad_norm, tokens / max(time.perf_counter() - since, 1e-9))
            tokens, since = 0, time.perf_counter()
        self._window = (tokens, since)
        bar.update(1)
        self._periodic(p.step, total)
        # every rank must agree to stop after the same step (a signal may reach them apart)
        if self.stop_agreed if self.rank.distributed else self.stop_requested:
            bar.close()
            self._stop_interrupted()

    def _log_train(self, bar: Any, loss: float, grad_norm: float, tok_s: float) -> None:
        step, lr = self.progress.step, self.optimizer.param_groups[0]["lr"]
        self.logger.scalar("train/loss", loss, step)
        self.logger.scalar("train/lr", lr, step)
        self.logger.scalar("train/grad_norm", grad_norm, step)
        self.logger.scalar("train/tokens_per_s", tok_s, step)
        bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tok_s:,.0f}", refresh=False)
        if bar.disable:  # no terminal (a log file, CI): one line per logging interval instead
            log.info("step %d  loss %.4f  lr %.2e  tokens/s %.0f", step, loss, lr, tok_s)

    def _periodic(self, step: int, total: int) -> None:
        # Only rank 0 evaluates and saves; the others wait for it in the next step's all-reduce.
        if step == total or not self.rank.is_main:
            return  # the end of training evaluates and saves anyway
        if self.cfg.eval_every and step % self.cfg.eval_every == 0:
            self._validate_and_sample()
        if step % self.cfg.checkpoint_every == 0:
            self.save(self.paths.latest, keep_step=True)

    def _validate_and_sample(self) -> None:
        """Evaluate and sample (evaluation.py), then keep the best checkpoint."""
        p = self.progress
        figures = validate_and_sample(self)
        name, measure = self.cfg.best_set_and_measure()  # progress keeps that set's best
        valid_loss, bleu = figures[f"{name}/loss"], figures[f"{name}/bleu"]
        improved = (
            math.isfinite(bleu) and bleu > p.best_bleu
            if measure == "bleu"
            else math.isfinite(valid_loss) and valid_loss < p.best_valid_loss
        )
        if math.isfinite(valid_loss):
            p.best_valid_loss = min(p.best_valid_loss, valid_loss)
        if math.isfinite(bleu):
            p.best_bleu = max(p.best_bleu, bleu)
        if improved:
            self.save(self.paths.best)

    def _end_of_training(self) -> None:
        if self.rank.is_main:
            self._validate_and_sample()
            self.save(self.paths.latest, keep_step=True)
            if self.cfg.average_last:
                averaged, _ = average_run(
                    self.paths.weights_dir, self.cfg.average_last, partial=True
                )
                log.info("averaged the last checkpoints into %s", averaged)
            if self.ema is not None:  # written last: translate and validate take the newer
                state = weights_only(self.state_dict())
                state["model"] = self.ema.model_state(self.model)
                save_checkpoint(state, self.paths.weights_dir / EMA)
                log.info("the weights' moving average is in %s", self.paths.weights_dir / EMA)
        barrier()
        self.logger.close()
        log.info(
            "training finished at step %d; checkpoints in %s",
            self.progress.step,
            self.paths.weights_dir,
        )

    def _check_finite(self, loss: float, grad_norm: float) -> None:
        if math.isfinite(loss) and math.isfinite(grad_norm):
            return
        step = self.progress.step + 1
        if self.cfg.on_nonfinite == "skip":
            self.progress.skipped_steps += 1
            self.logger.scalar("train/skipped_steps", self.progress.skipped_steps, step)
            log.warning("step %d: non-finite loss (%s), update skipped", step, loss)
            return
        last = self.paths.latest if self.paths.latest.is_file() else "none yet"
        raise TrainingError(
            f"step {step}: the loss is not finite ({loss}); last good checkpoint: {last}; "
            "lower train.lr or set train.on_nonfinite=skip"
        )

    def _stop_interrupted(self) -> None:
        self.save(self.paths.latest)
        barrier()
        self.logger.close()
        raise TrainingError(
            f"interrupted at step {self.progress.step}; checkpoint saved to {self.paths.latest}; "
            f"resume with: translator train --run {self.paths.name} --resume"
        )
