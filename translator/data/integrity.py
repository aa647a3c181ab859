"""Proving a prepared store whole: what its meta.json records of its files is checked at every
open, so a store damaged after it was written (a disk error, a partial copy, a hand edit) is
never used."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from translator.durable import file_digest, remove_dir
from translator.errors import DataError


class StoreDamaged(DataError):
    """A store whose files are not the ones that were written."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"the prepared store {path} is damaged ({problem})")
        self.path, self.problem = path, problem


def verify_files(path: Path, meta: dict[str, Any]) -> None:
    """Prove the store's files are the ones written: meta.json's own digest, then each file's
    size and SHA-256, then that no id reaches past the vocabulary. Reads every byte once."""
    if meta.get("meta_sha256") != meta_digest(meta):
        raise StoreDamaged(path, "meta.json differs from what was written")
    for name, record in meta["files"].items():
        problem = file_problem(path, name, record["size"], record["sha256"])
        if problem is not None:
            raise StoreDamaged(path, problem)
    for name, largest in meta["max_id"].items():
        if largest >= meta["vocab_size"]:
            raise StoreDamaged(path, f"{name} holds id {largest}, past the vocabulary")


def file_problem(folder: Path, name: str, size: int, sha256: str) -> str | None:
    """What differs between `folder/name` and the size and SHA-256 recorded when it was written
    (it is missing, has another size, or another content), or None when it is that file."""
    file = folder / name
    try:
        found = file.stat().st_size
    except OSError:
        return f"{name} is missing"
    if found != size:
        return f"{name} has {found:,} bytes, {size:,} were written"
    if file_digest(file) != sha256:
        return f"{name}: its content differs from what was written"
    return None


def meta_digest(meta: dict[str, Any]) -> str:
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def discard_damaged(damaged: StoreDamaged) -> None:
    """Move a damaged store out of its place, then delete it (a reader that has it open keeps
    its files until it closes them), so the next prepare writes a fresh one."""
    remove_dir(damaged.path)
