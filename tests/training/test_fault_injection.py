"""Crashes and interrupts lose nothing.

SIGKILL a real training run at seeded random moments, again and again: after every kill each
checkpoint on disk still loads, and `--resume` continues from the last complete one; at the end
the run finishes at its `max_steps`. SIGTERM (like Ctrl-C) finishes the step, saves and says how
to resume; a second Ctrl-C quits at once.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import ROOT, start_cli

from translator.errors import CheckpointError
from translator.run.checkpoint import load_checkpoint

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

TINY = str(ROOT / "configs" / "tiny.yaml")
KILLS = 10
RUN = "crash"


@dataclass
class Launch:
    """One `translator train` process whose stderr is read in the background."""

    proc: subprocess.Popen
    reader: threading.Thread | None = None
    lines: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    step: int = 0
    """The last training step the run has logged."""

    @classmethod
    def start(cls, args: list[str]) -> Launch:
        proc = start_cli(*args)
        launch = cls(proc)
        launch.reader = threading.Thread(target=launch._read, daemon=True)
        launch.reader.start()
        return launch

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("ready to train"):
                self.ready.set()
            if found := re.match(r"step (\d+)  loss", line):
                self.step = int(found.group(1))
        self.ended.set()
        self.ready.set()  # stop waiting for it

    def wait_ready(self, timeout: float = 120) -> None:
        assert self.ready.wait(timeout), "the run never became ready"
        assert self.proc.poll() is None, self.stderr()

    def wait_for_step(self, step: int, timeout: float = 120) -> None:
        """Wait until the run has logged training step `step`."""
        self._wait(lambda: self.step >= step, timeout)

    def wait_for_line(self, text: str, timeout: float = 30) -> None:
        """Wait until the run has written a line holding `text`."""
        self._wait(lambda: any(text in line for line in self.lines), timeout)

    def _wait(self, done: Callable[[], bool], timeout: float) -> None:
        """Poll until `done()`; fail with the run's stderr if it ends or the time runs out."""
        deadline = time.monotonic() + timeout
        while not done():
            assert not self.ended.is_set() and time.monotonic() < deadline, self.stderr()
            time.sleep(0.002)

    def finish(self, timeout: float = 60) -> int:
        """Wait for the process to exit and its stderr to be read; its exit code."""
        code = self.proc.wait(timeout=timeout)
        assert self.reader is not None
        self.reader.join(timeout=timeout)
        return code

    def stderr(self) -> str:
        return "\n".join(self.lines)


def step_of(path: Path) -> int:
    return int(load_checkpoint(path)["progress"]["step"])


def temp_files_of(weights: Path, pid: int) -> list[Path]:
    """Checkpoint temp files of the process `pid` (see `save_checkpoint`)."""
    return sorted(weights.glob(f".*.pt.{pid}-*.tmp"))


def kill_when_writing(launch: Launch, weights: Path, timeout: float = 20) -> bool:
    """SIGKILL `launch` as soon as one of its checkpoint temp files appears (False: none did)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and launch.proc.poll() is None:
        if temp_files_of(weights, launch.proc.pid):
            launch.proc.send_signal(signal.SIGKILL)
            return True
        time.sleep(0.0005)
    return False


def test_sigkill_at_random_moments_never_breaks_a_checkpoint(corpus: Path) -> None:
    rng = random.Random(20240611)
    weights = Path("weights") / RUN
    args = [
        "train", "--config", TINY, "--run", RUN, "--device", "cpu",
        "--set", f"data.source={corpus}",
        "--set", "train.max_steps=100000",
        "--set", "train.epochs=100000",
        "--set", "train.checkpoint_every=1",
        "--set", "train.eval_every=5",
        "--set", "train.log_every=1",
    ]  # fmt: skip
    # Each moment about as often as the others, in a seeded random order.
    kinds = ("checkpoint write", "training", "startup")
    moments = [kinds[i % 3] for i in range(KILLS)]
    rng.shuffle(moments)
    log: list[tuple[str, int | None, bool]] = []  # (moment, resumed-from step, killed mid-write)
    for moment in moments:
        latest = weights / "latest.pt"
        resume_from = step_of(latest) if latest.is_file() else None
        launch = Launch.start(args + (["--resume"] if resume_from is not None else []))
        if moment == "startup":  # import, data preparation, tokenizers, config, split
            time.sleep(rng.uniform(0.0, 3.0))
            launch.proc.send_signal(signal.SIGKILL)
        else:
            launch.wait_ready()
            if resume_from is not None:
                assert f"resumed from {latest} at step {resume_from}" in launch.stderr()
            if moment == "training":  # a few steps in, then a moment into whatever follows
                launch.wait_for_step((resume_from or 0) + rng.randint(1, 6))
                time.sleep(rng.uniform(0.0, 0.2))
                launch.proc.send_signal(signal.SIGKILL)
            else:
                assert kill_when_writing(launch, weights), launch.stderr()
        assert launch.finish() == -signal.SIGKILL, launch.stderr()

        # Every checkpoint on disk is complete; a write that was cut short left only its temp.
        for path in weights.glob("*.pt"):
            try:
                load_checkpoint(path)
            except CheckpointError as exc:
                pytest.fail(f"after kill {len(log) + 1} ({moment}): {exc}")
        temps = temp_files_of(weights, launch.proc.pid)
        if latest.is_file() and resume_from is not None:
            assert step_of(latest) >= resume_from  # no progress was lost
        log.append((moment, resume_from, bool(temps)))

    print(
        *(
            f"kill {n}: {m}; resumed from step {r}; mid-write {w}"
            for n, (m, r, w) in enumerate(log, 1)
        ),
        sep="\n",
    )
    # Mid-write kills happened and the later saves cleaned up what they left.
    assert sum(mid_write for *_, mid_write in log) >= 2, log
    assert len({resumed for _, resumed, _ in log}) >= 3, log  # training moved on between kills

    # Finally let the run finish: it resumes once more and reaches max_steps.
    last = step_of(weights / "latest.pt")
    final = subprocess.run(
        [sys.executable, "-m", "translator", *args, "--resume",
         "--set", f"train.max_steps={last + 6}"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert final.returncode == 0, final.stderr
    assert re.search(rf"resumed from {weights / 'latest.pt'} at step {last}\b", final.stderr)
    assert step_of(weights / "latest.pt") == last + 6
    assert not list(weights.glob(".latest.pt.*.tmp"))


def long_run(corpus: Path, run: str, *extra: str) -> list[str]:
    return [
        "train", "--config", TINY, "--run", run, "--device", "cpu",
        "--set", f"data.source={corpus}",
        "--set", "train.max_steps=100000",
        "--set", "train.epochs=100000",
        "--set", "train.eval_every=0",
        "--set", "train.log_every=1",
        *extra,
    ]  # fmt: skip


def test_sigterm_finishes_the_step_saves_and_says_how_to_resume(corpus: Path) -> None:
    launch = Launch.start(long_run(corpus, "term", "--set", "train.checkpoint_every=100000"))
    launch.wait_ready()
    launch.wait_for_step(2)
    launch.proc.send_signal(signal.SIGTERM)
    assert launch.finish() == 1, launch.stderr()
    err = launch.stderr()
    step = step_of(Path("weights/term/latest.pt"))  # no periodic checkpoint: this is the stop's
    assert "SIGTERM: stopping after this step" in err and "Traceback" not in err
    assert step == launch.step >= 2  # the step under way was finished and is in the checkpoint
    assert err.splitlines()[-1] == (
        f"error: interrupted at step {step}; checkpoint saved to weights/term/latest.pt; "
        "resume with: translator train --run term --resume"
    )


def test_second_ctrl_c_quits_at_once(corpus: Path) -> None:
    """Steps of a bigger model take long enough for both signals to land in one."""
    bigger = [
        "--set", "model.d_model=256", "--set", "model.d_ff=1024", "--set", "model.n_heads=4",
        "--set", "train.batch_tokens=4096", "--set", "train.checkpoint_every=2",
    ]  # fmt: skip
    launch = Launch.start(long_run(corpus, "twice", *bigger))
    launch.wait_ready()
    launch.wait_for_step(3)  # the step-2 checkpoint is written
    before = step_of(Path("weights/twice/latest.pt"))
    launch.proc.send_signal(signal.SIGINT)
    # Two signals sent before the process runs again arrive as one: send the second only once
    # the first is handled.
    launch.wait_for_line("SIGINT: stopping after this step")
    launch.proc.send_signal(signal.SIGINT)
    assert launch.finish(timeout=30) == 130, launch.stderr()
    err = launch.stderr()
    assert "Traceback" not in err and err.splitlines()[-1] == "interrupted"
    assert "checkpoint saved" not in err  # it did not wait to finish the step and save
    assert step_of(Path("weights/twice/latest.pt")) == before  # the last checkpoint still loads
    assert not list(Path("weights/twice").glob(".*.tmp"))
