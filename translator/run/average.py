"""Checkpoint averaging: the mean of the weights of a run's last K checkpoints.

Training with `train.average_last: K` keeps the newest K checkpoints of the weights as
`step_<N>.pt` (weights only: no optimizer state) and writes `averaged.pt` at the end;
`translator average --run NAME --last K` does the same afterwards. `translate` and `validate` use
`averaged.pt` when it was made at the step of the run's `latest.pt` or later (of it and a current
`ema.pt`, the newer).

`--with-parent W`, for a run made from another (`train.init_from`), then moves the average a
share W of the way to the weights it started from (the checkpoint its parent.json names):
weight-space ensembling of the fine-tuned and the original model (WiSE-FT, Wortsman et al. 2022),
which gives back some of what fine-tuning forgot at little cost in the new domain.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from translator.durable import file_digest
from translator.errors import CheckpointError, ConfigError
from translator.run.checkpoint import AVERAGED, load_checkpoint, save_checkpoint
from translator.run.lineage import read_parent_record
from translator.run.paths import PARENT_RECORD

_STEP_FILE = re.compile(r"step_(\d+)\.pt")


def step_checkpoint_name(step: int) -> str:
    return f"step_{step:08d}.pt"


def step_checkpoints(run_dir: Path) -> list[Path]:
    """The run's kept `step_<N>.pt` files, oldest first."""
    found = [
        (int(m.group(1)), p)
        for p in run_dir.glob("step_*.pt")
        if (m := _STEP_FILE.fullmatch(p.name))
    ]
    return [p for _, p in sorted(found)]


def keep_step_checkpoint(state: dict[str, Any], run_dir: Path, keep: int) -> Path:
    """Write the weights of `state` as step_<N>.pt, then delete all but the newest `keep`."""
    step = int(state["progress"]["step"])
    path = run_dir / step_checkpoint_name(step)
    save_checkpoint(weights_only(state), path)
    for old in step_checkpoints(run_dir)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def weights_only(state: dict[str, Any]) -> dict[str, Any]:
    """`state` without its optimizer, RNG and weight-average state, marked as fit for inference
    only."""
    kept = {k: v for k, v in state.items() if k != "ema"}
    return {**kept, "optimizer": {}, "rng": {}, "weights_only": True}


def average_states(paths: list[Path]) -> dict[str, Any]:
    """A checkpoint whose weights are the mean of those in `paths`; the rest from the newest."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    states = [load_checkpoint(p) for p in paths]
    newest = states[-1]
    keys = newest["model"].keys()
    for path, state in zip(paths, states, strict=True):
        if state["model"].keys() != keys or state["tokenizers"] != newest["tokenizers"]:
            raise CheckpointError(
                f"{path}: a different model or vocabulary than {paths[-1]}; average checkpoints "
                "of one run only"
            )
    averaged = weighted_sum([s["model"] for s in states], [1 / len(states)] * len(states))
    out = weights_only({k: v for k, v in newest.items() if k not in ("format", "version")})
    out["model"] = averaged
    out["averaged_from"] = [p.name for p in paths]
    return out


def weighted_sum(models: list[dict[str, Any]], weights: list[float]) -> dict[str, Any]:
    """sum(w * model) of each floating-point tensor, computed in float64; the rest (integer
    buffers) from the last model."""
    return {
        key: sum(w * m[key].double() for m, w in zip(models, weights, strict=True)).to(value.dtype)
        if value.is_floating_point()
        else value
        for key, value in models[-1].items()
    }


def blend_with_parent(state: dict[str, Any], run_dir: Path, share: float) -> dict[str, Any]:
    """`state` with its weights moved `share` of the way to those the run started from."""
    record = read_parent_record(run_dir)
    if record is None:
        raise ConfigError(
            f"--with-parent: run {run_dir.name} was not made from another run (no "
            f"{PARENT_RECORD}); only a run trained with train.init_from has weights to go back to"
        )
    checkpoint = Path(record["checkpoint"])
    try:
        digest = file_digest(checkpoint) if checkpoint.is_file() else None
        parent = load_checkpoint(checkpoint)
    except CheckpointError as exc:
        raise CheckpointError(
            f"--with-parent: the parent's checkpoint, as {run_dir / PARENT_RECORD} names it: {exc}"
        ) from None
    step = int(parent["progress"].get("step", 0))
    _check_same_parent(record, run_dir, checkpoint, digest, step)
    if parent["tokenizers"] != state["tokenizers"]:
        raise CheckpointError(
            f"--with-parent: {checkpoint} has another vocabulary than run {run_dir.name}; it is "
            "not the checkpoint the run started from: keep a copy of the parent's run as it was"
        )
    mine, theirs = state["model"], parent["model"]
    if mine.keys() != theirs.keys():
        raise CheckpointError(f"--with-parent: {checkpoint} holds other weights than the run")
    blended = weighted_sum([theirs, mine], [share, 1 - share])  # integer buffers: the run's
    made_from = {
        "share": share,
        "run": record.get("run"),
        "checkpoint": str(checkpoint),
        "step": step,
        **({"sha256": digest} if digest else {}),
    }
    return {**state, "model": blended, "blended_with_parent": made_from}


def _check_same_parent(
    record: dict[str, Any], run_dir: Path, checkpoint: Path, digest: str | None, step: int
) -> None:
    """The parent's checkpoint is the very file the run started from (its SHA-256, recorded in
    parent.json; the step alone for records made before the hash was kept)."""
    then, now = record.get("sha256"), digest
    if (then is None or then == now) and step == record["step"]:
        return
    changed = (
        f"its content changed (SHA-256 {then[:12]}… then, {now[:12]}… now)"
        if then is not None and then != now
        else "it was rewritten"
    )
    raise CheckpointError(
        f"--with-parent: {checkpoint} is not the checkpoint run {run_dir.name} started from: "
        f"{changed}; step {step:,} now, {record['step']:,} then; only the weights the run "
        "started from can be blended: restore that file from a copy of the parent's run as it was"
    )


def average_run(
    run_dir: Path,
    last: int,
    output: Path | None = None,
    partial: bool = False,
    with_parent: float = 0.0,
) -> tuple[Path, dict[str, Any]]:
    """Average the run's newest `last` step checkpoints into `output` (default averaged.pt);
    with `partial`, fewer when fewer are kept; with `with_parent`, that share of the weights
    the run started from. Returns where, and what was written."""
    if last < 1:
        raise ConfigError(f"--last {last}: give the number of checkpoints to average, e.g. 5")
    if not 0 <= with_parent < 1:
        raise ConfigError(
            f"--with-parent {with_parent}: the parent's share of the weights, from 0 (none) up "
            "to below 1, e.g. 0.25"
        )
    kept = step_checkpoints(run_dir)
    if not kept:
        raise CheckpointError(
            f"{run_dir}: no step_<N>.pt checkpoints to average; train with "
            "--set train.average_last=K to keep the last K"
        )
    if len(kept) < last and not partial:
        raise CheckpointError(
            f"{run_dir}: --last {last} but only {len(kept)} step checkpoints are kept "
            f"({kept[0].name} .. {kept[-1].name}); use --last {len(kept)}"
        )
    output = output or run_dir / AVERAGED
    state = average_states(kept[-last:])
    if with_parent:
        state = blend_with_parent(state, run_dir, with_parent)
    save_checkpoint(state, output)
    return output, state
