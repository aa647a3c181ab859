"""`translator train`: a run trained from its config file and `--set`, or resumed."""

from __future__ import annotations

from pathlib import Path


def train_command(
    config: Path | None,
    overrides: list[str],
    init_from: str | None,
    run: str | None,
    resume: str | None,
    device: str | None,
    runs_dir: Path,
    weights_dir: Path,
) -> None:
    """`--init-from` is `train.init_from`; then training's entry from a config file."""
    from translator.training.train import train_command as train_from_config

    overrides = [*overrides, *([f"train.init_from={init_from}"] if init_from else [])]
    train_from_config(config, overrides, run, resume, device, runs_dir, weights_dir)
