"""One training process per run: an OS lock (flock) on weights/NAME/train.lock.

The kernel drops the lock when its process ends, however it ends, so a killed run never leaves a
lock behind that blocks the next one; the pid written into the file only names the holder.
`translate` and `validate` do not take the lock: they may read a run while it trains.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from translator.errors import RunInUseError

try:
    import fcntl
except ImportError:  # Windows: no flock; runs are not locked there
    fcntl = None  # type: ignore[assignment]

LOCK = "train.lock"


@contextmanager
def run_lock(weights_dir: Path, name: str, wait: bool = False, file: str = LOCK) -> Iterator[None]:
    """Hold the run's training lock for the duration; a run in use is a RunInUseError, or with
    `wait`, waited for. Caches that two processes may make at once lock the same way (with
    `file`, a lock of their own in their folder): the second waits, then finds it made."""
    if fcntl is None:
        yield
        return
    path = weights_dir / file
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunInUseError(_in_use(fd, path, name)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock


def check_run_free(weights_dir: Path, name: str) -> None:
    """A RunInUseError now when another process holds the run's lock (before a long job that
    would only be refused the lock at its end); takes nothing and writes nothing."""
    path = weights_dir / LOCK
    if fcntl is None or not path.is_file():
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunInUseError(_in_use(fd, path, name)) from None
    finally:
        os.close(fd)


def _in_use(fd: int, path: Path, name: str) -> str:
    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    who = f"process {holder}" if holder.isdigit() else "another process"
    return (
        f"run {name!r} is in use: {who} is training it (lock {path}); wait for it to end or "
        "stop it, or train another run with --run NEW_NAME"
    )
