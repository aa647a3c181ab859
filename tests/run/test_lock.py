"""One training process per run: a second `train` exits 2 naming the holder; a killed holder's
lock never blocks; `translate` and `validate` read the run while it trains."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT, cli, start_cli

from translator.errors import RunInUseError
from translator.run.checkpoint import load_checkpoint
from translator.run.lock import LOCK, run_lock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock and SIGKILL are POSIX")

TINY = str(ROOT / "configs" / "tiny.yaml")
RUN = "busy"
WEIGHTS = Path("weights") / RUN


def translator(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return cli(Path.cwd(), *args, timeout=timeout)


@pytest.fixture
def training(corpus: Path) -> Iterator[subprocess.Popen]:
    """A `translator train` that runs until killed, once it holds the lock and has a checkpoint."""
    args = [
        "train", "--config", TINY, "--run", RUN, "--device", "cpu",
        "--set", f"data.source={corpus}",
        "--set", "train.max_steps=100000",
        "--set", "train.epochs=100000",
        "--set", "train.checkpoint_every=5",
        "--set", "train.eval_every=0",
    ]  # fmt: skip
    proc = start_cli(*args)
    try:
        deadline = time.monotonic() + 120
        while not (WEIGHTS / "latest.pt").is_file():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.1)
        assert (WEIGHTS / LOCK).read_text().strip() == str(proc.pid)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()


def test_second_trainer_exits_2_naming_the_holder_while_translate_and_validate_work(
    training: subprocess.Popen,
) -> None:
    second = translator("train", "--run", RUN, "--resume", "--device", "cpu")
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert lines[0] == (
        f"error: run 'busy' is in use: process {training.pid} is training it "
        f"(lock {WEIGHTS / LOCK}); wait for it to end or stop it, or train another run "
        "with --run NEW_NAME"
    )
    # The run goes on, and it can be read meanwhile.
    translated = translator("translate", "--run", RUN, "--device", "cpu", "one two .")
    assert translated.returncode == 0, translated.stderr
    assert len(translated.stdout.splitlines()) == 1 and translated.stdout.strip()
    validated = translator("validate", "--run", RUN, "--device", "cpu", "--beam", "1")
    assert validated.returncode == 0, validated.stderr
    assert "BLEU" in validated.stdout + validated.stderr
    assert training.poll() is None  # the first trainer was not disturbed


def test_lock_of_a_killed_trainer_does_not_block(training: subprocess.Popen) -> None:
    training.send_signal(signal.SIGKILL)
    training.wait(timeout=30)
    assert (WEIGHTS / LOCK).read_text().strip() == str(training.pid)  # the stale pid stays
    step = int(load_checkpoint(WEIGHTS / "latest.pt")["progress"]["step"])
    resumed = translator(
        "train", "--run", RUN, "--resume", "--device", "cpu",
        "--set", f"train.max_steps={step + 2}",
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert int(load_checkpoint(WEIGHTS / "latest.pt")["progress"]["step"]) == step + 2
    assert (WEIGHTS / LOCK).read_text() == ""  # released on exit: no pid left to mislead


def test_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    with run_lock(tmp_path, "r"):
        with pytest.raises(RunInUseError, match=f"process {os.getpid()} is training it"):
            with run_lock(tmp_path, "r"):
                pass
    with run_lock(tmp_path, "r"):  # free again
        assert (tmp_path / LOCK).read_text() == f"{os.getpid()}\n"
