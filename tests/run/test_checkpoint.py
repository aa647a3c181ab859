"""Checkpoints: an atomic save that survives a full disk or a failed write, and a load that
refuses, in one line, every file that is not a sound checkpoint, without ever running its code."""

from __future__ import annotations

import errno
import io
import os
import pickle
import random
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import ROOT

import translator.durable as durable
from translator.errors import CheckpointError
from translator.run.checkpoint import FORMAT, VERSION, load_checkpoint, save_checkpoint


def make_state(value: float, step: int = 1) -> dict[str, Any]:
    """A checkpoint-shaped state whose contents identify it."""
    return {
        "model": {"w": torch.full((5000,), value)},
        "optimizer": {"state": {}, "param_groups": []},
        "progress": {"step": step},
        "rng": {"torch": torch.get_rng_state(), "cuda": []},
        "config": {},
        "tokenizers": {"src": "0" * 16, "tgt": "1" * 16},
    }


def assert_one_line(exc: pytest.ExceptionInfo, *parts: str) -> None:
    message = str(exc.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message


def assert_intact(path: Path, value: float) -> None:
    """`path` is still the checkpoint holding `value`, and no temporary file is left beside it."""
    assert torch.equal(load_checkpoint(path)["model"]["w"], torch.full((5000,), value))
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


# --------------------------------------------------------------------------- saving


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "w" / "latest.pt"
    save_checkpoint(make_state(1.0, step=7), path)
    state = load_checkpoint(path)
    assert state["format"] == FORMAT and state["version"] == VERSION
    assert state["progress"]["step"] == 7
    assert_intact(path, 1.0)


def _partial_write_then(error: BaseException):
    """A torch.save that writes the start of a checkpoint and then fails with `error`."""
    real_save = torch.save

    def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        f.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        raise error

    return save


def test_disk_full_during_write_keeps_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "latest.pt"
    save_checkpoint(make_state(1.0), path)
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(torch, "save", _partial_write_then(full))
    with pytest.raises(CheckpointError) as exc:
        save_checkpoint(make_state(2.0), path)
    assert_one_line(exc, str(path), "No space left on device", "previous checkpoint is intact")
    assert_intact(path, 1.0)


def test_disk_full_at_fsync_keeps_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "latest.pt"
    save_checkpoint(make_state(1.0), path)

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(durable.os, "fsync", fsync)
    with pytest.raises(CheckpointError) as exc:
        save_checkpoint(make_state(2.0), path)
    assert_one_line(exc, "No space left on device")
    monkeypatch.undo()
    assert_intact(path, 1.0)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_real_file_size_limit_is_reported_not_a_torch_internal_error(tmp_path: Path) -> None:
    """A real failing write (not a mock): torch.save alone says 'unexpected pos'."""
    import resource

    path = tmp_path / "latest.pt"
    save_checkpoint(make_state(1.0), path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size // 2, hard))
    try:  # Python ignores SIGXFSZ, so an over-long write fails with EFBIG
        with pytest.raises(CheckpointError) as exc:
            save_checkpoint(make_state(2.0), path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert_one_line(exc, str(path), "File too large", "previous checkpoint is intact")
    assert_intact(path, 1.0)


def test_interrupt_during_write_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "latest.pt"
    save_checkpoint(make_state(1.0), path)
    monkeypatch.setattr(torch, "save", _partial_write_then(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(make_state(2.0), path)
    assert_intact(path, 1.0)


def test_unwritable_directory_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "weights"
    blocker.write_text("a file where the weights directory should be")
    with pytest.raises(CheckpointError) as exc:
        save_checkpoint(make_state(1.0), blocker / "run" / "latest.pt")
    assert_one_line(exc, "could not write checkpoint", str(blocker / "run" / "latest.pt"))

    # A directory without write permission (simulated: tests often run as root, which ignores
    # the mode bits).
    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(durable, "open", denied, raising=False)
    with pytest.raises(CheckpointError) as exc:
        save_checkpoint(make_state(1.0), tmp_path / "ro" / "latest.pt")
    assert_one_line(exc, "Permission denied", "writable weights directory")


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="needs POSIX permissions, not root"
)
def test_read_only_directory_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "latest.pt"
    save_checkpoint(make_state(1.0), path)
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(CheckpointError) as exc:
            save_checkpoint(make_state(2.0), path)
    finally:
        tmp_path.chmod(0o700)
    assert_one_line(exc, "Permission denied")
    assert_intact(path, 1.0)


def test_temp_files_of_killed_writers_are_cleaned_up(tmp_path: Path) -> None:
    path = tmp_path / "latest.pt"
    save_checkpoint(make_state(1.0), path)
    stale = tmp_path / ".latest.pt.99999.tmp"
    stale.write_bytes(path.read_bytes()[:100])  # what a SIGKILL mid-write leaves
    save_checkpoint(make_state(2.0), path)
    assert_intact(path, 2.0)


# --------------------------------------------------------------------------- loading bad files


def _bad_files(good: bytes) -> dict[str, tuple[Any, str]]:
    """name -> (file contents or a writer, the phrase the error must contain)."""
    other_zip = io.BytesIO()
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("hello.txt", "not a checkpoint")
    return {
        "truncated to half": (good[: len(good) // 2], "truncated or corrupt"),
        "truncated to 100 bytes": (good[:100], "truncated or corrupt"),
        "empty": (b"", "truncated or corrupt"),
        "random bytes": (random.Random(0).randbytes(4096), "truncated or corrupt"),
        "a YAML file": ((ROOT / "configs" / "tiny.yaml").read_bytes(), "truncated or corrupt"),
        "another zip file": (other_zip.getvalue(), "truncated or corrupt"),
        "a list": (lambda p: torch.save([1, 2, 3], p), "not a translator checkpoint"),
        "a plain state dict": (
            lambda p: torch.save({"w": torch.zeros(3)}, p),
            "not a translator checkpoint",
        ),
        "a newer version": (
            lambda p: torch.save({"format": FORMAT, "version": VERSION + 1}, p),
            f"version {VERSION + 1} is not supported",
        ),
        "no contents": (
            lambda p: torch.save({"format": FORMAT, "version": VERSION}, p),
            "incomplete checkpoint",
        ),
        "no tokenizers": (
            lambda p: torch.save({**_state_of(good), "tokenizers": None}, p),
            "incomplete checkpoint (no valid tokenizers)",
        ),
    }


def _state_of(data: bytes) -> dict[str, Any]:
    return torch.load(io.BytesIO(data), weights_only=True)


@pytest.mark.parametrize(
    "case", list(_bad_files(b"").keys()) + ["missing", "a directory"]
)  # fmt: skip
def test_bad_checkpoint_files_are_refused_in_one_line(tmp_path: Path, case: str) -> None:
    good_path = tmp_path / "good" / "latest.pt"
    save_checkpoint(make_state(1.0), good_path)
    path = tmp_path / "bad.pt"
    if case == "missing":
        phrase = "checkpoint not found"
    elif case == "a directory":
        path.mkdir()
        phrase = "checkpoint not found"
    else:
        contents, phrase = _bad_files(good_path.read_bytes())[case]
        if callable(contents):
            contents(path)
        else:
            path.write_bytes(contents)
    with pytest.raises(CheckpointError) as exc:
        load_checkpoint(path)
    assert_one_line(exc, str(path), phrase)


def test_corrupted_checkpoints_raise_only_checkpoint_error(tmp_path: Path) -> None:
    """Seeded truncations and byte flips: each file loads (damage in tensor data cannot be
    seen) or fails with CheckpointError, never with another exception."""
    good = tmp_path / "latest.pt"
    save_checkpoint(make_state(1.0), good)
    data = good.read_bytes()
    rng = random.Random(1234)
    bad = tmp_path / "bad.pt"
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(150):
        damaged = bytearray(data)
        if i % 3 == 0:
            damaged = damaged[: rng.randrange(len(data))]
        else:  # the first few KB hold the pickled structure, the rest tensor bytes
            region = 4000 if i % 3 == 1 else len(data)
            for _ in range(rng.randint(1, 8)):
                damaged[rng.randrange(region)] = rng.randrange(256)
        bad.write_bytes(bytes(damaged))
        try:
            state = load_checkpoint(bad)
        except CheckpointError as exc:
            assert "\n" not in str(exc)
            outcomes["refused"] += 1
        else:
            assert isinstance(state["model"], dict) and isinstance(state["progress"], dict)
            outcomes["loaded"] += 1
    assert outcomes["refused"] >= 50, outcomes


# --------------------------------------------------------------------------- pickled code


class _Payload:
    """Unpickling this calls `os.system` to create `marker`: what a malicious checkpoint does."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f'touch "{self.marker}"',))


def _write_malicious(path: Path, marker: Path, kind: str) -> None:
    state = {**make_state(0.0), "format": FORMAT, "version": VERSION}
    state["model"] = {"w": torch.zeros(3), "extra": _Payload(marker)}
    if kind == "zip":
        torch.save(state, path)
    elif kind == "legacy":
        torch.save(state, path, _use_new_zipfile_serialization=False)
    else:  # no tensors: plain pickle stores them as calls too, and those are refused first
        path.write_bytes(pickle.dumps({"format": FORMAT, "model": _Payload(marker)}, protocol=2))


@pytest.mark.skipif(sys.platform == "win32", reason="the payload uses `touch`")
def test_the_malicious_payload_is_real(tmp_path: Path) -> None:
    """Loaded the unsafe way, the crafted file does run its code: the refusal below means
    something."""
    marker = tmp_path / "ran"
    _write_malicious(tmp_path / "evil.pt", marker, "zip")
    torch.load(tmp_path / "evil.pt", weights_only=False)
    assert marker.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="the payload uses `touch`")
@pytest.mark.parametrize("kind", ["zip", "legacy", "raw pickle"])
def test_checkpoint_that_would_run_code_is_refused_and_code_never_runs(
    tmp_path: Path, kind: str
) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    _write_malicious(path, marker, kind)
    with pytest.raises(CheckpointError) as exc:
        load_checkpoint(path)
    assert_one_line(exc, str(path), "refused to load", "system", "nothing in it was run")
    assert not marker.exists()


def test_a_save_removes_the_temp_files_of_dead_writers_only(tmp_path: Path) -> None:
    """Temporary names are unique to a process: a save clears those of writers killed mid-write,
    never one a live process is still writing."""
    import subprocess

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    path = tmp_path / "latest.pt"
    dead = tmp_path / f".latest.pt.{gone.pid}-0badc0de.tmp"
    live = tmp_path / f".latest.pt.{os.getppid()}-0c0ffee0.tmp"
    for f in (dead, live):
        f.write_bytes(b"half a checkpoint")
    save_checkpoint(make_state(1.0), path)
    assert not dead.exists() and live.exists()
    assert load_checkpoint(path)["model"].keys() == make_state(1.0)["model"].keys()
