"""What the distill wing's tests share: the tiny teacher's config, how it translates, and
processes started together."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT

from translator.config import Config, load_config
from translator.distill.teacher import Teacher, find_teacher
from translator.errors import TranslatorError

TINY = ROOT / "configs" / "tiny.yaml"


def student_config(data: Path, *sets: str) -> Config:
    return load_config(TINY, [f"data.source={data}", "distill.beam=2", *sets])


def sources_of(data: Path) -> list[str]:
    return [json.loads(line)["translation"]["en"] for line in data.read_text().splitlines()]


def torch_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Translate with PyTorch, as without CTranslate2 installed."""

    def missing() -> None:
        raise TranslatorError("CTranslate2 is not installed")

    monkeypatch.setattr("translator.export.engine.import_ctranslate2", missing)


def torch_teacher(teacher_root: Path, monkeypatch: pytest.MonkeyPatch) -> Teacher:
    """The tiny run as a teacher, translating with PyTorch."""
    torch_only(monkeypatch)
    return find_teacher("tiny", teacher_root / "weights")


WAIT = """
import sys, time
from pathlib import Path
Path(sys.argv[1]).touch()
while not Path(sys.argv[2]).exists():
    time.sleep(0.002)
"""


def at_once(code: str, *args: str, n: int = 2) -> list[subprocess.CompletedProcess]:
    """Run `code` (after WAIT: it starts when told) in `n` processes released together."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ready = [Path(f"ready{k}") for k in range(n)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WAIT + code, str(ready[k]), "go", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for k in range(n)
    ]
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    Path("go").touch()
    done = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done
