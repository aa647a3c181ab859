"""The learning-rate schedule: linear warmup, then inverse square root, constant, or a decay that
reaches zero exactly when the training budget (steps or minutes) runs out."""

from __future__ import annotations

import math

from translator.config import TrainConfig


def learning_rate(
    step: int, cfg: TrainConfig, total_steps: int | None = None, time_fraction: float = 0.0
) -> float:
    """The learning rate of optimizer step `step` (0-based).

    For `linear` and `cosine`, the decay runs over whichever budget is closer to its end: the
    steps (`total_steps`, from train.max_steps or the epochs) or the wall time (`time_fraction`,
    the share of train.max_minutes used), so the rate is about zero at the deadline.
    """
    if cfg.schedule == "inverse_sqrt":
        step = step + 1
        if cfg.warmup_steps == 0:
            return cfg.lr / math.sqrt(step)
        return cfg.lr * min(step / cfg.warmup_steps, math.sqrt(cfg.warmup_steps / step))
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return cfg.lr
    done = time_fraction
    if total_steps is not None and total_steps > cfg.warmup_steps:
        done = max(done, (step - cfg.warmup_steps) / (total_steps - cfg.warmup_steps))
    done = min(max(done, 0.0), 1.0)
    if cfg.schedule == "linear":
        return cfg.lr * (1.0 - done)
    return cfg.lr * 0.5 * (1.0 + math.cos(math.pi * done))  # cosine
