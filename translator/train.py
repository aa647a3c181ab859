"""Training: the Trainer (train_step, evaluate, fit) and the `translator train` entry point."""

from __future__ import annotations

import dataclasses
import logging
import math
import signal
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from translator.checkpoint import load_checkpoint, save_checkpoint
from translator.config import Config, load_config, save_config
from translator.data import Batch, TokenBatchSampler, collate, shard_batches
from translator.decode import greedy_decode
from translator.device import autocast_dtype, resolve_device
from translator.distributed import (
    all_reduce_sum,
    barrier,
    current_rank,
    init_distributed,
    launched_by_torchrun,
    shutdown,
)
from translator.errors import CheckpointError, ConfigError, TranslatorError
from translator.evaluate import evaluate_translations, validation_loss
from translator.metrics import Logger, NullLogger, TensorBoardLogger
from translator.model import Transformer, build_model, count_parameters
from translator.rundir import PreparedData, RunPaths, prepare_data
from translator.tokenizer import PAD_ID, decode_ids, fingerprint

log = logging.getLogger("translator")


class TrainingError(TranslatorError):
    """Training cannot go on (non-finite loss, interrupted)."""


# --------------------------------------------------------------------------- schedule


def learning_rate(step: int, cfg: Any) -> float:
    """Linear warmup to `lr`, then inverse square root decay (or constant)."""
    if cfg.schedule == "constant":
        return (
            cfg.lr if step >= cfg.warmup_steps else cfg.lr * (step + 1) / max(1, cfg.warmup_steps)
        )
    step = step + 1
    if cfg.warmup_steps == 0:
        return cfg.lr / math.sqrt(step)
    return cfg.lr * min(step / cfg.warmup_steps, math.sqrt(cfg.warmup_steps / step))


# --------------------------------------------------------------------------- trainer


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
            betas=(0.9, 0.98),
            eps=1e-9,
            weight_decay=self.cfg.weight_decay,
            fused=device.type in ("cpu", "cuda"),
        )
        self.amp_dtype = autocast_dtype(self.cfg.precision, device)
        self.progress = Progress()
        self.sampler = TokenBatchSampler(
            data.train.src_lengths(), data.train.tgt_lengths(), self.cfg.batch_tokens, self.cfg.seed
        )
        self.stop_requested = False  # set by a signal handler
        self.stop_agreed = False  # all ranks saw a stop request before the last step
        self.time_up = False  # train.max_minutes ran out (agreed by all ranks)
        self.deadline: float | None = None  # time.monotonic() at which max_minutes runs out
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
        lr = learning_rate(self.progress.step, self.cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        # Normalise by the real target tokens of all batches on all ranks together. DDP averages
        # gradients over ranks, hence the factor world_size. The stop flag rides along, so that
        # every rank stops after the same step.
        local_tokens = sum(b.n_tgt_tokens for b in batches)
        out_of_time = self.deadline is not None and time.monotonic() > self.deadline
        n_tokens, stops, late = all_reduce_sum(
            [local_tokens, float(self.stop_requested), float(out_of_time)], self.device
        )
        self.stop_agreed, self.time_up = stops > 0, late > 0
        self.last_step_tokens = int(n_tokens)
        scale = self.rank.world_size / n_tokens
        total = 0.0
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
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
        return total, grad_norm

    # ---- evaluation

    def evaluate(self) -> float:
        """Validation loss: mean cross-entropy per real target token (no label smoothing)."""
        with self.autocast():
            return validation_loss(self.model, self.data.valid, self.cfg.batch_tokens, self.device)

    def samples(self) -> list[tuple[str, str, str]]:
        """(source, reference, greedy prediction) for the first few validation pairs; their
        cross-attention maps go to TensorBoard as images."""
        n = min(self.cfg.n_samples, len(self.data.valid))
        if n == 0:
            return []
        items = [self.data.valid[i] for i in range(n)]
        batch = collate(items).to(self.device)
        dec = self.config.decode
        with self.autocast():
            outputs = greedy_decode(
                self.model, batch.src, dec.max_len_a, dec.max_len_b, ban_unk=dec.ban_unk
            )
        if not isinstance(self.logger, NullLogger):
            from translator.attention import translation_figure

            for i, (item, out) in enumerate(zip(items, outputs, strict=True)):
                fig = translation_figure(
                    self.model,
                    item["encoder_input"],
                    out,
                    self.data.src_tokenizer,
                    self.data.tgt_tokenizer,
                    dec,
                )
                self.logger.figure(f"valid/attention_{i + 1}", fig, self.progress.step)
        return [
            (src, ref, decode_ids(self.data.tgt_tokenizer, out))
            for (src, ref), out in zip(self.data.valid_pairs[:n], outputs, strict=True)
        ]

    # ---- checkpoints

    def state_dict(self) -> dict[str, Any]:
        p = self.progress
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "progress": {**dataclasses.asdict(p), "world_size": self.rank.world_size},
            "rng": {
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            },
            "config": self.config.to_dict(),
            "tokenizers": {
                "src": fingerprint(self.data.src_tokenizer),
                "tgt": fingerprint(self.data.tgt_tokenizer),
            },
        }

    def load_state_dict(self, state: dict[str, Any], where: Path) -> None:
        """Restore weights, optimizer, progress and RNG; a foreign checkpoint is one clear error."""
        try:
            self._load_state_dict(state, where)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(
                f"{where}: incomplete or foreign checkpoint ({type(exc).__name__}: {exc}); "
                "use another checkpoint of the run"
            ) from None

    def _load_state_dict(self, state: dict[str, Any], where: Path) -> None:
        for side, tok in (("src", self.data.src_tokenizer), ("tgt", self.data.tgt_tokenizer)):
            if state["tokenizers"][side] != fingerprint(tok):
                raise CheckpointError(
                    f"{where}: its {side} vocabulary differs from {self.paths.tokenizer(side)}; "
                    "the checkpoint belongs to another run"
                )
        try:
            self.model.load_state_dict(state["model"])
        except RuntimeError as exc:
            first = str(exc).splitlines()[1].strip() if "\n" in str(exc) else str(exc)
            raise CheckpointError(
                f"{where}: model shape does not match the config ({first})"
            ) from None
        self.optimizer.load_state_dict(state["optimizer"])
        progress = dict(state["progress"])
        saved_world = progress.pop("world_size", 1)
        if saved_world != self.rank.world_size:
            # Positions count this rank's share of an epoch's batches; carry the same number of
            # batches consumed over to the new number of ranks.
            progress["batch_in_epoch"] = (
                progress["batch_in_epoch"] * saved_world // (self.rank.world_size)
            )
        self.progress = Progress(**progress)
        torch.set_rng_state(state["rng"]["torch"])
        if state["rng"]["cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
        if self.rank.rank > 0:  # distinct dropout streams per rank
            torch.manual_seed(self.cfg.seed * 7919 + self.rank.rank * 104729 + self.progress.step)

    def save(self, path: Path) -> None:
        """Write a checkpoint (rank 0 only: the weights are the same on every rank)."""
        if self.rank.is_main:
            save_checkpoint(self.state_dict(), path)

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """This rank's batches (lists of example indices) for `epoch`."""
        return shard_batches(self.sampler.batches(epoch), self.rank.rank, self.rank.world_size)

    # ---- the loop

    def fit(self) -> Progress:
        """Train until `max_steps` or `epochs`; evaluate, sample and checkpoint along the way."""
        from tqdm import tqdm

        cfg, p = self.cfg, self.progress
        steps_per_epoch = math.ceil(len(self.epoch_batches(0)) / cfg.accum_steps)
        total = cfg.max_steps or cfg.epochs * steps_per_epoch
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
        with _StopOnSignal(self):
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
                    p.epoch, p.batch_in_epoch = p.epoch + 1, 0
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
        step, lr = self.progress.step, learning_rate(self.progress.step - 1, self.cfg)
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
            self.save(self.paths.latest)

    def _validate_and_sample(self) -> None:
        """Validation loss (and BLEU/chrF), samples to the log and TensorBoard; keep the best."""
        from tqdm import tqdm

        step, p = self.progress.step, self.progress
        valid_loss = self.evaluate()
        self.logger.scalar("valid/loss", valid_loss, step)
        lines = [f"step {step}: valid loss {valid_loss:.4f}"]
        bleu = math.nan
        if self.cfg.eval_bleu and len(self.data.valid):
            with self.autocast():
                _, scores = evaluate_translations(
                    self.model, self.data, self.config.decode, self.device, beam=1, progress=False
                )
            bleu = scores.bleu
            self.logger.scalar("valid/bleu", scores.bleu, step)
            self.logger.scalar("valid/chrf", scores.chrf, step)
            lines[0] += f", BLEU {scores.bleu:.2f}, chrF {scores.chrf:.2f} (greedy)"
        samples = self.samples()
        table = "| source | reference | prediction |\n|---|---|---|\n" + "\n".join(
            f"| {s} | {r} | {h} |" for s, r, h in samples
        )
        self.logger.text("valid/samples", table, step)
        self.logger.flush()
        lines += [f"  src: {s}\n  ref: {r}\n  hyp: {h}" for s, r, h in samples]
        tqdm.write("\n".join(lines), file=sys.stderr)
        improved = (
            math.isfinite(bleu) and bleu > p.best_bleu
            if self.cfg.best_metric == "bleu"
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
            self.save(self.paths.latest)
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


class _StopOnSignal:
    """SIGINT/SIGTERM ask the trainer to stop after the current step; a second SIGINT stops now."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        self.previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.trainer.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.trainer.stop_requested = True
        print(
            f"\n{signal.Signals(signum).name}: stopping after this step and saving a checkpoint "
            "(Ctrl-C again to quit at once)",
            file=sys.stderr,
        )

    def __enter__(self) -> _StopOnSignal:
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


# --------------------------------------------------------------------------- entry point


def train_command(
    config_path: Path | None,
    overrides: list[str],
    run: str | None,
    resume: str | None,
    device_name: str | None,
    runs_root: Path = Path("runs"),
    weights_root: Path = Path("weights"),
) -> Trainer:
    """`translator train`: build everything from the config and train; resume when asked.

    Under torchrun, every process runs this; rank 0 alone prepares the data, logs and saves.
    """
    if launched_by_torchrun():
        init_distributed(resolve_device(device_name))
    try:
        return _train(config_path, overrides, run, resume, device_name, runs_root, weights_root)
    finally:
        shutdown()


def _train(
    config_path: Path | None,
    overrides: list[str],
    run: str | None,
    resume: str | None,
    device_name: str | None,
    runs_root: Path,
    weights_root: Path,
) -> Trainer:
    rank = current_rank()
    level = logging.INFO if rank.is_main else logging.WARNING
    logging.basicConfig(level=level, format="%(message)s", stream=sys.stderr)
    if run is None and config_path is None:
        raise ConfigError("train: give --config PATH (and/or --run NAME to resume a run)")
    paths = RunPaths.create(run or Path(config_path).stem, runs_root, weights_root)
    resume_path = _resume_path(resume, paths)
    if resume_path is None and paths.latest.is_file():
        raise ConfigError(
            f"run {paths.name!r} already has checkpoints in {paths.weights_dir}; continue it with "
            f"--resume, or start another with --run NEW_NAME"
        )
    if resume_path is None and rank.is_main:
        paths.discard_prepared()  # a fresh start: nothing of an earlier, failed attempt is reused
    # On resume the run's own resolved config is the base; --set may still change it (max_steps).
    base = paths.config if resume_path is not None and paths.config.is_file() else config_path
    config = load_config(base, overrides)
    device = resolve_device(device_name)
    if rank.distributed and device.type == "cuda":
        device = torch.device("cuda", rank.local_rank)
    torch.manual_seed(config.train.seed)

    start = time.perf_counter()
    if rank.is_main:  # tokenizers, split and encoded data are made once, then read by the others
        paths.make()
        data = prepare_data(config, paths)
        save_config(config, paths.config)
    barrier()
    if not rank.is_main:
        data = prepare_data(config, paths)
    model = build_model(
        config.model,
        data.src_tokenizer.get_vocab_size(),
        data.tgt_tokenizer.get_vocab_size(),
        shared_vocab=config.tokenizer.shared,
    )
    if rank.rank > 0:  # same initial weights everywhere, distinct dropout streams per rank
        torch.manual_seed(config.train.seed * 7919 + rank.rank * 104729)
    log.info(
        "data: %s; %s train / %s valid pairs; vocab %s src / %s tgt",
        data.stats.summary(),
        f"{len(data.train):,}",
        f"{len(data.valid):,}",
        f"{data.src_tokenizer.get_vocab_size():,}",
        f"{data.tgt_tokenizer.get_vocab_size():,}",
    )
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
    trainer = Trainer(config, model, data, paths, device, logger)
    if resume_path is not None:
        trainer.load_state_dict(load_checkpoint(resume_path, map_location=device), resume_path)
        log.info("resumed from %s at step %d", resume_path, trainer.progress.step)
    log.info("ready to train after %.1f s", time.perf_counter() - start)
    trainer.fit()
    return trainer


def _resume_path(resume: str | None, paths: RunPaths) -> Path | None:
    if resume is None:
        return None
    if resume == "latest":
        if not paths.latest.is_file():
            raise CheckpointError(
                f"--resume: run {paths.name!r} has no checkpoint at {paths.latest}; "
                "start it without --resume"
            )
        return paths.latest
    return Path(resume)
