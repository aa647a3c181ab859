"""What the command line's parser shares: the options several commands take, and `--resume`
without a path read as `--resume=latest`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bare_resume_means_latest(args: list[str]) -> list[str]:
    """`--resume` followed by another option (or nothing) means `--resume=latest`.

    Click would otherwise take the next option, e.g. `--set`, as the checkpoint path.
    """
    out = []
    for i, arg in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else None
        if arg == "--resume" and (following is None or following.startswith("-")):
            arg = "--resume=latest"
        out.append(arg)
    return out


# The options several commands share.
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="YAML config file, e.g. configs/cpu.yaml.")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config key: section.key=value (repeatable)."),
]
RunOpt = Annotated[
    str | None,
    typer.Option(
        "--run",
        "--name",
        help="Run name (default: the config file's stem). Under torchrun, spell it --name.",
    ),
]
DeviceOpt = Annotated[
    str | None, typer.Option("--device", help="cpu, cuda or mps (default: the best available).")
]
ModelRunOpt = Annotated[
    str | None,
    typer.Option("--run", help="Run to use (default: the one trained last under --weights-dir)."),
]
CheckpointOpt = Annotated[
    Path | None,
    typer.Option(
        "--checkpoint",
        help="Checkpoint file (default: the run's weight average, ema.pt or averaged.pt, the "
        "newer, when current; else best.pt; else latest.pt).",
    ),
]
ModelDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--model", help="A directory from `translator export`: decode with CTranslate2, no torch."
    ),
]
BeamOpt = Annotated[
    int | None,
    typer.Option("--beam", help="Beam size; 1 = greedy (default: the run's decode.beam)."),
]
RunsDirOpt = Annotated[Path, typer.Option("--runs-dir", help="Where TensorBoard runs go.")]
WeightsDirOpt = Annotated[Path, typer.Option("--weights-dir", help="Where checkpoints go.")]
