"""`translator distill`: a student trained on its teacher's translations."""

from __future__ import annotations

from pathlib import Path


def distill_command(
    teacher: str,
    config: Path | None,
    overrides: list[str],
    run: str | None,
    resume: str | None,
    device: str | None,
    runs_dir: Path,
    weights_dir: Path,
) -> None:
    """The teacher translates the student's data (or reuses it), then the student trains."""
    from translator.distill.command import distill_command as distill_student

    distill_student(teacher, config, overrides, run, resume, device, runs_dir, weights_dir)
