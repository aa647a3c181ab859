"""`translator average`: the weights of a run's last checkpoints averaged into one."""

from __future__ import annotations

import sys
from pathlib import Path

from translator.errors import ConfigError
from translator.run.average import average_run


def average_command(
    run: str, last: int, output: Path | None, weights_root: Path, with_parent: float = 0.0
) -> None:
    """`translator average`: write the run's averaged checkpoint and say where."""
    run_dir = weights_root / run
    if not run_dir.is_dir():
        raise ConfigError(f"--run {run}: no directory {run_dir}")
    path, state = average_run(run_dir, last, output, with_parent=with_parent)
    names = state["averaged_from"]
    made = state.get("blended_with_parent")
    blended = (
        f", {made['share']:g} of the way to the weights of its parent {made['run']} "
        f"(step {made['step']:,}),"
        if made
        else ""
    )
    print(f"averaged {len(names)} checkpoints ({', '.join(names)}){blended} into {path}",
          file=sys.stderr)  # fmt: skip
