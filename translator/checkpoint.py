"""Checkpoints: atomic save, safe load (`weights_only`), and the files of a run directory."""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from translator.errors import CheckpointError

FORMAT = "translator-checkpoint"
VERSION = 1
LATEST, BEST = "latest.pt", "best.pt"


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """Write `state` to `path` atomically: a temp file in the same directory, fsync, rename.

    A crash or a full disk leaves the previous file at `path` untouched.
    """
    state = {"format": FORMAT, "version": VERSION, **state}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CheckpointError(
            f"could not write checkpoint {path}: {exc.strerror or exc}; the previous checkpoint "
            "is intact; free some disk space or choose a writable weights directory"
        ) from None


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint written by `save_checkpoint`, never executing pickled code."""
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(
            f"{path}: refused to load: it holds objects other than tensors and plain data "
            f"({str(exc).splitlines()[-1][:120]}); only load checkpoints you trust"
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CheckpointError(
            f"{path}: not a readable checkpoint (truncated or corrupt: {str(exc)[:120]}); "
            "use another checkpoint of the run, e.g. best.pt or latest.pt"
        ) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a translator checkpoint")
    if state.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {state.get('version')} is not supported")
    return state


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
