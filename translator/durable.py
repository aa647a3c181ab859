"""Files published whole (ground): written under a temporary name of their own, flushed to disk,
renamed into place, the directory flushed too. A reader sees the old file or the new one, never
half of one, and two writers of the same name never write into one temporary file.

Every file the project publishes goes through here: checkpoints, run records, tables, caches.
Folders (a prepared store, an exported teacher, an export, an imported run) are written under
`temp_name` and renamed with `publish_dir` (`published_dir` does both around a block).
`file_digest` proves a published file whole when it is read back.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def temp_name(path: Path) -> Path:
    """A temporary name beside `path`, unique to this process and call."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


@contextmanager
def published(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """A file to write `path` through: on leaving the block it is flushed to disk and renamed
    into place; on an error it is removed, and `path` is as it was."""
    tmp = temp_name(path)
    encoding = None if "b" in mode else "utf-8"
    try:
        with open(tmp, mode, encoding=encoding) as f:
            yield f
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    publish_file(tmp, path)


def publish_text(path: Path, text: str) -> None:
    """Write `text` to `path` whole (see `published`)."""
    with published(path) as f:
        f.write(text)


def publish_copy(src: Path, path: Path) -> None:
    """Copy `src` to `path` whole (see `published`)."""
    with published(path, "wb") as f, src.open("rb") as source:
        shutil.copyfileobj(source, f)


def publish_file(tmp: Path, path: Path) -> None:
    """Rename a file written by another library (under `temp_name(path)`) into place, flushed
    to disk first."""
    try:
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def publish_dir(tmp: Path, path: Path) -> bool:
    """Rename the finished folder `tmp` to `path`, its files flushed to disk first. False (and
    `tmp` left to the caller) when a folder is there already: another writer published first."""
    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb") as handle:
                os.fsync(handle.fileno())
    fsync_dir(tmp)
    try:
        os.rename(tmp, path)
    except OSError as exc:
        if path.exists():
            return False
        raise exc from None
    fsync_dir(path.parent)
    return True


@contextmanager
def published_dir(path: Path) -> Iterator[Path]:
    """A fresh temporary folder beside `path` to fill; when the block ends, published as `path`
    (an empty folder there is replaced) with `publish_dir`, and removed if the block raises.
    FileExistsError when another writer published `path` meanwhile."""
    tmp = temp_name(path)  # two writers to one place never share a temporary folder
    try:
        tmp.mkdir(parents=True)
        yield tmp
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        if not publish_dir(tmp, path):
            raise FileExistsError(errno.EEXIST, "another writer published it meanwhile")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_dir(path: Path) -> None:
    """Remove a folder: renamed aside first (a reader with files open keeps them), then deleted."""
    aside = path.with_name(f".removed-{path.name}-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.rename(path, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def remove_stale_temps(path: Path) -> None:
    """Delete temporary files (or folders) of `path` left by writers that no longer run."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        pid = stale.name[len(path.name) + 2 :].split("-", 1)[0].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and process_alive(int(pid)):
            continue
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        with contextlib.suppress(OSError):
            stale.unlink()


def process_alive(pid: int) -> bool:
    """Whether a process of that id runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fsync_dir(directory: Path) -> None:
    """Make the names just written in `directory` durable (where the platform allows)."""
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


def file_digest(path: Path) -> str:
    """SHA-256 of a file, read in 8 MiB pieces (flat memory, whatever its size)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while piece := f.read(1 << 23):
            digest.update(piece)
    return digest.hexdigest()
