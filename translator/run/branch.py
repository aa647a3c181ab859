"""A resume from an earlier checkpoint starts a new branch of the run: the checkpoints written
after that step belong to the branch left behind, and are set aside, so that what `translate`
chooses (checkpoint_of_run) and what the end of training averages are of the resumed branch.

They are moved, not deleted, into weights/NAME/abandoned-after-step-N/: nothing is lost.
"""

from __future__ import annotations

import re
from pathlib import Path

from translator.durable import fsync_dir
from translator.errors import CheckpointError
from translator.run.checkpoint import AVERAGED, BEST, EMA, LATEST, saved_step

_STEP_FILE = re.compile(r"step_(\d+)\.pt")


def later_checkpoints(run_dir: Path, step: int, resumed_from: Path) -> list[tuple[Path, int]]:
    """The run's checkpoints made after `step` (each with its step), `resumed_from` excepted."""
    later = []
    for path in sorted(run_dir.glob("*.pt")):
        if path.resolve() == resumed_from.resolve():
            continue
        found = _STEP_FILE.fullmatch(path.name)
        if found is not None:
            made_at = int(found.group(1))
        elif path.name in (LATEST, BEST, EMA, AVERAGED):
            try:
                made_at = saved_step(path)
            except CheckpointError:  # unreadable: not of this branch either way; left alone
                continue
        else:
            continue
        if made_at > step:
            later.append((path, made_at))
    return later


def set_aside_later(run_dir: Path, step: int, resumed_from: Path) -> str | None:
    """Move the checkpoints made after `step` into abandoned-after-step-N/; one line saying what
    was moved, or None when there were none."""
    later = later_checkpoints(run_dir, step, resumed_from)
    if not later:
        return None
    aside = run_dir / f"abandoned-after-step-{step}"
    n = 1
    while aside.exists():
        n += 1
        aside = run_dir / f"abandoned-after-step-{step}-{n}"
    aside.mkdir()
    for path, _ in later:
        path.rename(aside / path.name)
    fsync_dir(aside)
    fsync_dir(run_dir)
    names = ", ".join(p.name for p, _ in later)
    last = max(made_at for _, made_at in later)
    return (
        f"resumed at step {step:,}: the checkpoints of the branch left behind ({names}; up to "
        f"step {last:,}) are moved to {aside}, so the run's average and its best are of this branch"
    )
