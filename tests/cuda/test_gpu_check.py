"""scripts/gpu_check.sh --cpu: every part of the GPU check runs here at toy sizes, so the script is
known to work before a GPU is ever used."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT, make_pairs, write_jsonl

PARTS = ("env", "peak", "tests", "train", "epoch", "short", "decode", "decode_ct2")


@pytest.mark.slow
def test_gpu_check_runs_every_part_on_the_cpu(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "opensubs.jsonl", make_pairs(800))
    write_jsonl(data / "tatoeba-dev.jsonl", make_pairs(100, seed=9))
    out = tmp_path / "out"
    start = time.monotonic()
    done = subprocess.run(
        [
            *("bash", str(ROOT / "scripts" / "gpu_check.sh"), str(out), "--cpu"),
            *("--data", str(data), "--budget", "180"),  # alone, ~30 s; more on a busy machine
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=300,
    )
    seconds = time.monotonic() - start
    figures = json.loads((out / "gpu_check.json").read_text())
    parts = figures["parts"]
    assert done.returncode == 0, (done.stderr[-3000:], parts)
    assert "gpu_check: done" in (out / "gpu_check.log").read_text()
    assert figures["mode"] == "cpu" and figures["total_s"] <= seconds
    expected_ct2 = "ok" if importlib.util.find_spec("ctranslate2") else "skipped"
    for name in PARTS:
        want = expected_ct2 if name == "decode_ct2" else "ok"
        assert parts[name]["status"] == want, (name, parts[name])
    assert parts["train_compile"]["status"] == "skipped"  # compiling on the CPU takes minutes
    assert parts["env"]["cuda_available"] is False
    assert parts["peak"]["peak_tflops"] > 0
    assert "skipped" in parts["tests"]["summary"]  # the cuda tests ran, and skipped here
    train = parts["train"]
    assert train["real_tgt_tokens_per_s"] > 0 and 0 < train["mfu"] < 1.5
    assert train["mfu"] == pytest.approx(train["achieved_tflops"] / parts["peak"]["peak_tflops"])
    assert parts["epoch"]["pairs"] == 400 and parts["epoch"]["train_s"] > 0
    assert parts["epoch"]["steps"] > 0
    assert parts["short"]["steps"] == 20
    for engine in ("decode", "decode_ct2"):
        if parts[engine]["status"] != "ok":
            continue
        prefix = "fp32_" if engine == "decode" else ""
        for search in ("greedy", "beam4"):
            assert parts[engine][f"{prefix}{search}_sentences_per_s"] > 0
            assert 0 <= parts[engine][f"{prefix}{search}_bleu"] <= 100
    assert parts["decode"]["sentences"] == 100
