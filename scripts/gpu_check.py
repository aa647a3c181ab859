"""The CUDA path, measured: tests and figures of this checkout on one GPU, in a time budget.

    scripts/gpu_check.sh OUT_DIR [--cpu] [--data DIR] [--budget SECONDS] [--short-minutes M]

(gpu_check.sh sets PYTHONPATH and installs any wheels in .whl/, then runs this.) Each part runs
in its own process under a time limit, most important first; one that fails, or would not fit in
what is left of the budget, is recorded with its status and error and the next one runs.
OUT_DIR/gpu_check.json is rewritten after every part; OUT_DIR/gpu_check.log holds all output.
env, peak and the decoding parts live in gpu_check_parts.py.

    env            python, torch, the device, which optional packages import
    peak           dense matmul rate: n x n @ n x n (CUDA: 8192, bf16), best of 20, timed
    tests          pytest -m cuda tests/cuda
    train          scripts/bench_train.py, configs/base.yaml, bf16: real target tokens/s, MFU
    train_compile  the same with train.compile=true (a longer warm-up: compiling)
    epoch          `translator train`, base.yaml, one epoch of 32,000 pairs of opensubs.jsonl
    short          `translator train`, base.yaml, a few minutes from scratch
    decode         the short run's model on all of tatoeba-dev.jsonl: greedy and beam 4,
                   fp32 and bf16 autocast: sentences/s and sacreBLEU (the dev BLEU)
    decode_ct2     the same model exported to CTranslate2, decoded on the device

MFU = (training FLOPs of the measured steps / their seconds) / the `peak` rate. The FLOPs are
bench_train.step_flops: the matrix multiplications of the shapes actually computed (the Q/K/V
and output projections, the FFN, QK^T and AV over the padded batch, the cross-attention K/V of
the source, the output projection over real target tokens), times 3 for forward + backward;
embeddings, norms, softmax and the optimizer are not counted. The peak is measured here, in
the training precision, not taken from a datasheet. --cpu runs every part at toy sizes on the
CPU (fp32, configs/tiny.yaml; no compiling: it takes minutes there), to check the script.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA_DIRS = (ROOT.parent / "shared/data/en-it", ROOT / ".gpudata")
CORPUS, DEV = "opensubs.jsonl", "tatoeba-dev.jsonl"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What each part runs, on a GPU or (--cpu) as a quick check of the script itself."""

    device: str
    config: str
    precision: str  # bench_train's precision, and the peak's dtype
    matmul_n: int
    bench: tuple[int, int]  # measured steps, warm-up steps
    bench_compiled: tuple[int, int] | None
    epoch_pairs: int
    data_lines: tuple[int, int] | None  # the first lines of the corpus and dev set, or all
    short: list[str]  # the short training's --set overrides, besides the time or step budget
    budget_s: float
    limits: dict[str, float]  # the most each part may take, in seconds


GPU = Sizes(
    "cuda", "configs/base.yaml", "bf16", 8192, (40, 8), (40, 20), 32_000, None,
    ["train.warmup_steps=1000", "train.schedule=cosine", "train.eval_every=0"],
    470.0,
    {"env": 30, "peak": 30, "tests": 150, "train": 90, "train_compile": 150, "epoch": 100,
     "short": 90, "decode": 60, "decode_ct2": 60},
)  # fmt: skip
CPU = Sizes(
    "cpu", "configs/tiny.yaml", "fp32", 512, (3, 1), None, 400, (2000, 200),
    ["train.max_steps=20", "train.eval_every=0", "train.n_samples=0"],
    60.0,
    {"env": 20, "peak": 20, "tests": 40, "train": 30, "train_compile": 0, "epoch": 30,
     "short": 30, "decode": 30, "decode_ct2": 30},
)  # fmt: skip
RESERVE_AFTER_SHORT_S = 100.0
"""Kept for the decoding parts when the short training's minutes are chosen (GPU); its limit is
those minutes plus limits["short"] (preparing the data, the final evaluation)."""


# --------------------------------------------------------------------------- running parts


class Check:
    """The figures so far (written out after every part) and the log."""

    def __init__(self, out: Path, sizes: Sizes, budget: float) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.sizes, self.start = out, sizes, time.monotonic()
        self.deadline = self.start + budget
        self.log = (out / "gpu_check.log").open("a", encoding="utf-8")
        self.figures: dict[str, Any] = {"mode": sizes.device, "budget_s": budget, "parts": {}}

    def say(self, line: str) -> None:
        stamp = f"[{time.monotonic() - self.start:7.1f}s]"
        self.log.write(f"{stamp} {line}\n")
        self.log.flush()
        print(f"{stamp} {line}", file=sys.stderr, flush=True)

    def write(self) -> None:
        self.figures["total_s"] = round(time.monotonic() - self.start, 1)
        tmp = self.out / ".gpu_check.json.tmp"
        tmp.write_text(json.dumps(self.figures, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.out / "gpu_check.json")

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def record(self, name: str, result: dict[str, Any]) -> dict[str, Any]:
        self.figures["parts"][name] = result
        self.write()
        self.say(f"== {name}: {result.get('status')} ({result.get('seconds', 0):.1f} s)")
        return result

    def run(
        self, name: str, command: list[str], cwd: Path = ROOT, limit: float | None = None
    ) -> tuple[dict[str, Any], list[tuple[float, str]]]:
        """Run `command` under the part's limit; its output goes to the log, line by line."""
        limit = min(limit or self.sizes.limits[name], self.left())
        if limit < 5:
            return {"status": "skipped", "reason": "out of the time budget"}, []
        self.say(f"== {name} (limit {limit:.0f} s): {' '.join(command)}")
        lines: list[tuple[float, str]] = []
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=part_env(self.sizes),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group, so a timeout ends all of it
        )

        def read() -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                lines.append((time.monotonic() - start, line.rstrip("\n")))
                self.log.write(f"  {name}| {line}")
            self.log.flush()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        reader.join(timeout=10)
        seconds = time.monotonic() - start
        result: dict[str, Any] = {"seconds": round(seconds, 1), "limit_s": round(limit), "rc": rc}
        if seconds >= limit:
            result |= {"status": "timeout", "error": f"stopped after {limit:.0f} s"}
        elif rc != 0:
            tail = [line for _, line in lines if line.strip()][-3:]
            result |= {"status": "failed", "error": " | ".join(tail)[-600:]}
        else:
            result["status"] = "ok"
        return result, lines


def part_env(sizes: Sizes) -> dict[str, str]:
    """The parts' environment: this source tree first on the path, offline, quiet."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env |= {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    if sizes.device == "cpu":
        env.setdefault("OMP_NUM_THREADS", "1")  # toy models: fastest on one thread
    return env


def last_json(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """The last line of output that is a JSON object (bench_train and the parts print one)."""
    for _, line in reversed(lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON line in the output")


def python(*args: str) -> list[str]:
    return [sys.executable, *args]


def this_part(name: str, **kwargs: Any) -> list[str]:
    """A part that runs in scripts/gpu_check_parts.py."""
    script = str(Path(__file__).resolve().with_name("gpu_check_parts.py"))
    return python(script, name, json.dumps(kwargs, default=str))


# --------------------------------------------------------------------------- the parts


def check_env(check: Check) -> None:
    result, lines = check.run("env", this_part("env", device=check.sizes.device))
    check.record("env", result | (last_json(lines) if result["status"] == "ok" else {}))


def check_peak(check: Check) -> float | None:
    s = check.sizes
    command = this_part("peak", device=s.device, dtype=s.precision, n=s.matmul_n)
    result, lines = check.run("peak", command)
    if result["status"] == "ok":
        result |= last_json(lines)
    check.record("peak", result)
    return result.get("peak_tflops")


def check_tests(check: Check) -> None:
    command = python("-m", "pytest", "-q", "-m", "cuda", "-rs", "-p", "no:cacheprovider")
    result, lines = check.run("tests", [*command, "tests/cuda"])
    summary = [line for _, line in lines if re.search(r"\b(passed|failed|skipped|error)", line)]
    if summary:
        result["summary"] = summary[-1].strip("= ")
    if result.get("rc") == 5:
        result |= {"status": "failed", "error": "no cuda tests collected"}
    check.record("tests", result)


def check_train(check: Check, data: Path, peak: float | None, compiled: bool) -> None:
    s = check.sizes
    name = "train_compile" if compiled else "train"
    steps = s.bench_compiled if compiled else s.bench
    if steps is None:
        check.record(name, {"status": "skipped", "reason": "--cpu: compiling takes minutes"})
        return
    command = python(
        "scripts/bench_train.py", "--config", s.config, "--data", str(data / CORPUS),
        "--device", s.device, "--steps", str(steps[0]), "--warmup", str(steps[1]),
        "--set", f"train.precision={s.precision}",
        "--set", f"train.compile={str(compiled).lower()}",
    )  # fmt: skip
    result, lines = check.run(name, command)
    if result["status"] == "ok":
        bench = last_json(lines)
        keep = ("parameters", "precision", "compile", "batch_tokens", "s_per_step", "pad_fraction")
        result |= {k: bench[k] for k in keep} | {
            "real_tgt_tokens_per_s": bench["real_tgt_tokens_per_s"],
            "real_src_tokens_per_s": bench["real_src_tokens_per_s"],
            "flops_per_step": bench["flops_per_step"],
            "achieved_tflops": bench["achieved_gflops"] / 1e3,
            "mfu": bench["achieved_gflops"] / 1e3 / peak if peak else None,
            "warmup_s": bench["warmup_s"],
            "data_prep_s": bench["data_prep_s"],
        }
        tokens_per_step = bench["real_tgt_tokens_per_s"] * bench["s_per_step"]
        result["flops_per_real_tgt_token"] = bench["flops_per_step"] / tokens_per_step
    check.record(name, result)


def train_command(check: Check, run: str, source: Path, *overrides: str) -> list[str]:
    sets = [f"data.source={source}", *overrides]
    args = ["-m", "translator", "train", "--config", str(ROOT / check.sizes.config), "--run", run]
    return python(*args, "--device", check.sizes.device, *(x for s in sets for x in ("--set", s)))


def training_times(lines: list[tuple[float, str]]) -> dict[str, Any]:
    """From `translator train`'s log: setup time, training time, steps and the last tokens/s."""
    found: dict[str, Any] = {}
    for t, line in lines:
        if m := re.search(r"ready to train after ([\d.]+) s", line):
            found["setup_s"], ready_at = float(m.group(1)), t
        elif m := re.search(r"training finished at step (\d+)", line):
            found["steps"] = int(m.group(1))
            if "setup_s" in found:
                found["train_s"] = round(t - ready_at, 1)
        elif m := re.search(r"step \d+\s+loss ([\d.]+).*tokens/s (\d+)", line):
            found["last_loss"], found["last_tokens_per_s"] = float(m.group(1)), int(m.group(2))
        elif m := re.search(r"data: .*?([\d,]+) train / ([\d,]+) valid pairs", line):
            found["train_pairs"] = int(m.group(1).replace(",", ""))
    return found


def check_epoch(check: Check, data: Path, work: Path) -> None:
    lines_in = (data / CORPUS).read_text(encoding="utf-8").splitlines(keepends=True)
    subset = work / "epoch.jsonl"
    subset.write_text("".join(lines_in[: check.sizes.epoch_pairs]), encoding="utf-8")
    sets = ("train.epochs=1", "train.max_steps=null", "train.eval_every=0")
    sets += ("train.eval_bleu=false", "train.n_samples=0")  # the end: one validation loss only
    result, lines = check.run("epoch", train_command(check, "epoch", subset, *sets), work)
    result |= {"pairs": min(len(lines_in), check.sizes.epoch_pairs), **training_times(lines)}
    result["note"] = (
        "train_s: from 'ready to train' to 'training finished', one validation-loss pass and "
        "one checkpoint write included"
    )
    check.record("epoch", result)


def check_short(check: Check, data: Path, work: Path, minutes: float) -> bool:
    s = check.sizes
    budget, limit = [], s.limits["short"]
    if s.device == "cuda":
        minutes = min(minutes, (check.left() - RESERVE_AFTER_SHORT_S) / 60)
        if minutes < 0.5:
            check.record("short", {"status": "skipped", "reason": "out of the time budget"})
            return False
        budget, limit = [f"train.max_minutes={minutes:.2f}"], limit + 60 * minutes
    sets = [*s.short, *budget]
    result, lines = check.run(
        "short", train_command(check, "short", data / CORPUS, *sets), work, limit
    )
    result |= {"config": s.config, "overrides": sets, **training_times(lines)}
    check.record("short", result)
    return result["status"] == "ok"


def check_decode(check: Check, data: Path, work: Path, name: str) -> None:
    packages = check.figures["parts"].get("env", {}).get("packages")
    if name == "decode_ct2" and packages and packages.get("ctranslate2") is None:
        check.record(name, {"status": "skipped", "reason": "ctranslate2 does not import here"})
        return
    args = {"weights": work / "weights", "run": "short", "dev": data / DEV}
    args |= {"device": check.sizes.device, "export": work / "ct2"}
    result, lines = check.run(name, this_part(name, **args))
    if result["status"] == "ok":
        result |= last_json(lines)
    check.record(name, result)


# --------------------------------------------------------------------------- main


def first_lines(data: Path, work: Path, counts: tuple[int, int] | None) -> Path:
    """`data`, or (--cpu) a copy of the first lines of its corpus and dev set in `work`."""
    if counts is None:
        return data
    (work / "data").mkdir()
    for name, n in zip((CORPUS, DEV), counts, strict=True):
        lines = (data / name).read_text(encoding="utf-8").splitlines(keepends=True)[:n]
        (work / "data" / name).write_text("".join(lines), encoding="utf-8")
    return work / "data"


def find_data(given: str | None) -> Path:
    for candidate in [Path(given)] if given else DATA_DIRS:
        if (candidate / CORPUS).is_file() and (candidate / DEV).is_file():
            return candidate.resolve()
    where = given or " or ".join(map(str, DATA_DIRS))
    sys.exit(f"gpu_check: no {CORPUS} and {DEV} in {where}; give --data DIR")


def guarded(check: Check, name: str, part: Any, *args: Any) -> Any:
    """`part(check, *args)`; an error in reading its figures is recorded, and the check goes on."""
    try:
        return part(check, *args)
    except Exception as exc:
        check.record(name, {"status": "failed", "error": f"gpu_check: {type(exc).__name__}: {exc}"})
        return None


def git_commit() -> str | None:
    """The checkout's commit, where there is a git repository (a device copy may have none)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for gpu_check.json and gpu_check.log")
    parser.add_argument("--cpu", action="store_true", help="toy sizes on the CPU (a smoke run)")
    parser.add_argument("--data", help=f"directory with {CORPUS} and {DEV}")
    parser.add_argument("--budget", type=float, help="seconds for all parts (GPU 470, CPU 60)")
    parser.add_argument("--short-minutes", type=float, default=2.0, help="the short training")
    args = parser.parse_args()
    sizes = CPU if args.cpu else GPU
    data = find_data(args.data)
    check = Check(args.out, sizes, args.budget or sizes.budget_s)
    check.figures |= {"data": str(data), "python": sys.executable, "commit": git_commit()}
    check.say(f"gpu_check: {sizes.device}, budget {check.deadline - check.start:.0f} s")
    work = Path(tempfile.mkdtemp(prefix="gpu_check-"))  # checkpoints: never under OUT
    try:
        data = first_lines(data, work, sizes.data_lines)
        guarded(check, "env", check_env)
        peak = guarded(check, "peak", check_peak)
        guarded(check, "tests", check_tests)
        guarded(check, "train", check_train, data, peak, False)
        guarded(check, "train_compile", check_train, data, peak, True)
        guarded(check, "epoch", check_epoch, data, work)
        trained = guarded(check, "short", check_short, data, work, args.short_minutes)
        for name in ("decode", "decode_ct2"):
            if trained:
                guarded(check, name, check_decode, data, work, name)
            else:
                check.record(name, {"status": "skipped", "reason": "no model: `short` failed"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
        check.write()
    statuses = {name: p["status"] for name, p in check.figures["parts"].items()}
    check.say(f"gpu_check: done in {check.figures['total_s']} s: {statuses}")
    sys.exit(1 if any(s in ("failed", "timeout") for s in statuses.values()) else 0)


if __name__ == "__main__":
    main()
