"""Checkpoints: durable save, safe load (`weights_only`), and the files of a run directory."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any, BinaryIO

import torch

from translator.durable import published, remove_stale_temps
from translator.errors import CheckpointError

FORMAT = "translator-checkpoint"
VERSION = 1
LATEST, BEST = "latest.pt", "best.pt"
EMA = "ema.pt"  # the weights' moving average (train.ema_decay), written at the end of training
AVERAGED = "averaged.pt"  # the mean of the last kept checkpoints (train.average_last)


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """Write `state` to `path` whole (translator/durable.py: a temp file, fsync, rename).

    A crash or a full disk leaves the previous file at `path` untouched.
    """
    state = {"format": FORMAT, "version": VERSION, **state}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with published(path, "wb") as f:
            writer = _Writer(f)
            try:
                torch.save(state, writer)
            except RuntimeError:  # torch reports a failed write as "unexpected pos"
                if writer.error is None:
                    raise
                raise writer.error from None
    except OSError as exc:
        kept = "the previous checkpoint is intact" if path.is_file() else "nothing was written"
        raise CheckpointError(
            f"could not write checkpoint {path}: {exc.strerror or exc}; {kept}; free some disk "
            "space or choose a writable weights directory"
        ) from None
    remove_stale_temps(path)


class _Writer:
    """A file's `write` that remembers the first OS error (a full disk), which torch.save hides."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            return self.f.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def flush(self) -> None:
        self.f.flush()


def load_checkpoint(
    path: Path, map_location: str | torch.device = "cpu", mmap: bool = False
) -> dict[str, Any]:
    """Load a checkpoint written by `save_checkpoint`, never executing pickled code; with `mmap`,
    its tensors are mapped from the file, read only when used."""
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    if path.stat().st_size == 0:
        raise CheckpointError(
            f"{path}: not a readable checkpoint (truncated or corrupt: the file is empty); "
            "use another checkpoint of the run, e.g. best.pt or latest.pt"
        )
    try:
        state = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(_unpickling_problem(path, exc)) from None
    except Exception as exc:  # a corrupt file surfaces as any of a dozen types from torch.load
        raise CheckpointError(
            f"{path}: not a readable checkpoint (truncated or corrupt: {_first_sentence(exc)}); "
            "use another checkpoint of the run, e.g. best.pt or latest.pt"
        ) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a translator checkpoint")
    if state.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {state.get('version')} is not supported")
    bad = [key for key in _REQUIRED if not isinstance(state.get(key), dict)]
    if bad:
        raise CheckpointError(
            f"{path}: incomplete checkpoint (no valid {', '.join(bad)}); "
            "use another checkpoint of the run, e.g. best.pt or latest.pt"
        )
    return state


def saved_step(path: Path) -> int:
    """The training step a checkpoint was written at, read without reading its weights."""
    return int(load_checkpoint(path, mmap=True)["progress"].get("step", 0))


_REQUIRED = ("model", "optimizer", "progress", "rng", "config", "tokenizers")
"""The entries every checkpoint holds (see `Trainer.state_dict`), each a dict."""


def _unpickling_problem(path: Path, exc: pickle.UnpicklingError) -> str:
    """One line for a file the weights-only unpickler rejected: code to run, or just not ours."""
    found = re.search(r"GLOBAL ([\w.]+)", str(exc))
    if found is not None:  # the file asks to import (and call) something: never do that
        return (
            f"{path}: refused to load: it would import and call {found.group(1)}, which a "
            "checkpoint never needs (nothing in it was run); only load checkpoints you trust"
        )
    return (
        f"{path}: not a readable checkpoint (truncated or corrupt, or not a PyTorch file); "
        "use another checkpoint of the run, e.g. best.pt or latest.pt"
    )


def _first_sentence(exc: Exception) -> str:
    text = re.sub(r"\[enforce fail at [^\]]*\][\s.]*", "", " ".join(str(exc).split()))
    return (text or type(exc).__name__).split(". ")[0][:160]
