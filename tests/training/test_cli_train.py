"""`translator train` end to end as a user runs it: real processes, files and TensorBoard."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import sacrebleu
import torch
from helpers import ROOT, scalars

from translator.data.prepare import prepare_data
from translator.inference.evaluate import validate_command
from translator.run.paths import RunPaths

TINY = str(ROOT / "configs" / "tiny.yaml")


def translator(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "translator", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def images(log_dir: Path, tag: str) -> list:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"images": 0})
    acc.Reload()
    return acc.Images(tag)


def checkpoint_step(path: Path) -> int:
    return torch.load(path, weights_only=True)["progress"]["step"]


def test_train_writes_events_checkpoints_and_resumes(corpus: Path) -> None:
    args = ["train", "--config", TINY, "--set", f"data.source={corpus}", "--run", "demo"]
    first = translator(*args, "--set", "train.max_steps=12")
    assert first.returncode == 0, first.stderr
    weights = Path("weights/demo")
    for name in (
        "config.yaml",
        "split.json",
        "tokenizer_src.json",
        "tokenizer_tgt.json",
        "latest.pt",
        "best.pt",
    ):
        assert (weights / name).is_file(), name
    assert checkpoint_step(weights / "latest.pt") == 12
    losses = scalars(Path("runs/demo"), "train/loss")
    assert [s for s, _ in losses] == [1, 5, 10, 12]  # log_every 5, the first and the last step
    assert all(0 < v < 20 for _, v in losses) and losses[-1][1] < losses[0][1]
    assert [s for s, _ in scalars(Path("runs/demo"), "valid/loss")] == [10, 12]
    # The BLEU logged at the end is validate's greedy BLEU of the final checkpoint, which is
    # sacreBLEU's own on the written hypotheses.
    logged = dict(scalars(Path("runs/demo"), "valid/bleu"))[12]
    result = validate_command("demo", weights / "latest.pt", 1, Path("hyps.txt"), None, [], "cpu")
    references = [ref for _, ref in prepare_data(result.loaded.config, RunPaths.create("demo"))
                  .valid_pairs]  # fmt: skip
    hypotheses = Path("hyps.txt").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == len(references) == 50
    expected = sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert logged == pytest.approx(expected, abs=1e-4)
    assert result.scores.bleu == pytest.approx(expected, abs=1e-9)
    assert images(Path("runs/demo"), "valid/attention_1")  # cross-attention maps of a sample

    resumed = translator(*args, "--resume", "--set", "train.max_steps=20")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from weights/demo/latest.pt at step 12" in resumed.stderr
    assert checkpoint_step(weights / "latest.pt") == 20
    steps = [s for s, _ in scalars(Path("runs/demo"), "train/loss")]
    assert max(steps) == 20 and 15 in steps  # logging continued after the saved step


def test_train_resolves_run_name_from_config_and_writes_resolved_config(corpus: Path) -> None:
    result = translator(
        "train",
        "--config",
        TINY,
        "--set",
        f"data.source={corpus}",
        "--set",
        "train.max_steps=2",
        "--set",
        "model.activation=gelu",
    )
    assert result.returncode == 0, result.stderr
    resolved = (Path("weights/tiny/config.yaml")).read_text()
    assert "activation: gelu" in resolved and str(corpus) in resolved
    assert Path("runs/tiny").is_dir()


def test_sigint_saves_a_checkpoint_and_says_how_to_resume(corpus: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "translator",
            "train",
            "--config",
            TINY,
            "--run",
            "int",
            "--set",
            f"data.source={corpus}",
            "--set",
            "train.max_steps=100000",
            "--set",
            "train.epochs=100000",
            "--set",
            "train.eval_every=0",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    for line in proc.stderr:  # wait until the loop runs
        if "ready to train" in line or time.time() > deadline:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "translator train --run int --resume" in err and "Traceback" not in err
    step = checkpoint_step(Path("weights/int/latest.pt"))
    assert f"interrupted at step {step}" in err and step > 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tensorboard_serves_the_loss_curve(corpus: Path) -> None:
    result = translator(
        "train",
        "--config",
        TINY,
        "--set",
        f"data.source={corpus}",
        "--run",
        "tb",
        "--set",
        "train.max_steps=10",
    )
    assert result.returncode == 0, result.stderr
    port = free_port()
    tensorboard = Path(sys.executable).with_name("tensorboard")
    server = subprocess.Popen(
        [str(tensorboard), "--logdir", "runs", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?run=tb&tag=train%2Floss"
        series, deadline = None, time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    series = json.load(response)
                if series:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert series, "TensorBoard never served the train/loss series"
        logged = scalars(Path("runs/tb"), "train/loss")
        assert [point[1] for point in series] == [step for step, _ in logged] == [1, 5, 10]
        assert [point[2] for point in series] == pytest.approx([v for _, v in logged])
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_unreachable_hub_fails_fast_with_a_hint() -> None:
    start = time.time()
    result = translator("train", "--config", TINY, "--set", "data.source=opus_books")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: data.source: could not load 'opus_books'")
    assert "--set data.source=" in lines[-1] and "Traceback" not in result.stderr
    assert time.time() - start < 60
