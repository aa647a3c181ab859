"""Distillation: a teacher, a small student trained on the references, and the same student
trained on the teacher's translations (`translator distill`) for the same minutes.

    python scripts/bench_distill.py --teacher adapt_c          # reuse a trained teacher
    python scripts/bench_distill.py                            # train the teacher first (60 min)

Without --teacher, the teacher is the 60-minute BPE-dropout recipe: configs/cpu.yaml with
tokenizer.dropout 0.1 on the general corpus. Each student uses configs/student.yaml on the
teacher's own data (or --source) for --minutes (30). Each model is then scored on the whole dev
set with `translator validate --data` (greedy and its shipped decoding), exported int8 and timed
with CTranslate2 on the dev set's sources, the fastest of 3 passes: sentences/s greedy and
shipped, on one thread and on two; size in MB; wall time of `translator translate --model DIR
"Hello"`. The time the teacher took to translate the corpus is read from the distill command's
output.

`--set key=value` (repeatable) changes both students' configs, e.g. a smaller vocabulary;
`--only distilled` trains and scores one of the two students.

Every command goes through the `translator` CLI as a user would type it, logged to
OUT/commands.log; a run already trained is reused. Prints a markdown table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml
from bench_adapt import DATA, ROOT, sh

PASSES = 3


def train_teacher(name: str, minutes: float, source: Path, log: Path) -> None:
    if (ROOT / "weights" / name / "latest.pt").is_file():
        return
    sh(["translator", "train", "--config", str(ROOT / "configs/cpu.yaml"), "--run", name,
        "--set", f"train.max_minutes={minutes}", "--set", "train.epochs=20",
        "--set", "tokenizer.dropout=0.1", "--set", f"data.source={source}"], log)  # fmt: skip


def train_students(
    teacher: str,
    prefix: str,
    minutes: float,
    source: str | None,
    seed: int | None,
    log: Path,
    sets: list[str],
    only: list[str],
):
    """The reference student and the distilled one (those named in `only`), each with the
    `--set` overrides `sets`: their run names by kind, and the distill command's own account."""
    student = str(ROOT / "configs/student.yaml")
    teacher_source = yaml.safe_load((ROOT / "weights" / teacher / "config.yaml").read_text())
    data = source or json.dumps(teacher_source["data"]["source"])
    common = ["--set", f"train.max_minutes={minutes}", "--set", f"data.source={data}"]
    common += ["--set", f"train.seed={seed}"] if seed is not None else []
    common += [a for s in sets for a in ("--set", s)]
    refs, distilled = f"{prefix}refs", f"{prefix}distilled"
    said = ""
    if "distilled" in only and not (ROOT / "weights" / distilled / "latest.pt").is_file():
        args = ["translator", "distill", "--teacher", teacher, "--config", student]
        said = sh([*args, "--run", distilled, *common], log, stderr=True)
    if "refs" in only and not (ROOT / "weights" / refs / "latest.pt").is_file():
        sh(["translator", "train", "--config", student, "--run", refs, *common], log)
    return {
        kind: run for kind, run in (("refs", refs), ("distilled", distilled)) if kind in only
    }, said


def scores(run: str, dev: Path, beam: int | None, log: Path) -> tuple[float, float, int]:
    args = ["translator", "validate", "--run", run, "--data", str(dev)]
    if beam is not None:
        args += ["--beam", str(beam), "--set", "decode.mbr=false"]
    out = sh(args, log)
    bleu = float(re.search(r"^BLEU\s+([\d.]+)", out, re.M).group(1))  # type: ignore[union-attr]
    chrf = float(re.search(r"^chrF\s+([\d.]+)", out, re.M).group(1))  # type: ignore[union-attr]
    step = int(re.search(r"\(step ([\d,]+)\)", out).group(1).replace(",", ""))  # type: ignore[union-attr]
    return bleu, chrf, step


def speed(model_dir: Path, sentences: list[str], beam: int | None, threads: int) -> float:
    """Sentences per second of the int8 export, over the dev set's sources, `threads` workers:
    the fastest of `PASSES` passes (one pass on this shared machine moved by a third)."""
    from translator.export.engine import load_exported, translate_exported

    model = load_exported(model_dir, threads=threads)
    translate_exported(model, sentences[:64], beam)  # warm up
    fastest = float("inf")
    for _ in range(PASSES):
        start = time.perf_counter()
        translate_exported(model, sentences, beam)
        fastest = min(fastest, time.perf_counter() - start)
    return len(sentences) / fastest


def start_time(model_dir: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["translator", "translate", "--model", str(model_dir), "Hello"],
                   capture_output=True, check=True)  # fmt: skip
    return time.perf_counter() - start


def measure(run: str, dev: Path, out: Path, log: Path) -> dict[str, float]:
    row: dict[str, float] = {}
    for label, beam in (("greedy", 1), ("shipped", None)):
        bleu, chrf, step = scores(run, dev, beam, log)
        row |= {f"{label}_bleu": bleu, f"{label}_chrf": chrf, "step": step}
    model = out / f"{run}-int8"
    if not model.is_dir():
        sh(["translator", "export", "--run", run, "--output", str(model)], log)
    row["size_mb"] = sum(f.stat().st_size for f in model.iterdir()) / 1e6
    row["model_mb"] = (model / "model.bin").stat().st_size / 1e6
    sources = [json.loads(line)["translation"]["en"] for line in dev.read_text().splitlines()]
    for threads in (1, 2):
        row[f"greedy_sps_{threads}"] = speed(model, sources, 1, threads)
        row[f"shipped_sps_{threads}"] = speed(model, sources, None, threads)
    row["start_s"] = min(start_time(model) for _ in range(3))
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--teacher", help="a trained teacher run to reuse (default: train one)")
    p.add_argument("--teacher-minutes", type=float, default=60)
    p.add_argument("--general", type=Path, default=DATA / "opensubs.jsonl")
    p.add_argument("--source", help="the students' data.source (default: the teacher's)")
    p.add_argument("--minutes", type=float, default=30, help="each student's minutes")
    p.add_argument("--dev", type=Path, default=DATA / "tatoeba-dev.jsonl")
    p.add_argument("--prefix", default="distill_")
    p.add_argument("--seed", type=int, help="the students' train.seed (default: student.yaml's)")
    p.add_argument("--set", dest="sets", action="append", default=[], help="for both students")
    p.add_argument("--only", default="refs,distilled", help="which students to train and score")
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_distill")
    args = p.parse_args()
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    if not set(only) <= {"refs", "distilled"}:
        p.error(f"--only {args.only}: name refs, distilled or both, separated by a comma")
    os.chdir(ROOT)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "commands.log"
    teacher = args.teacher or f"{args.prefix}teacher"
    train_teacher(teacher, args.teacher_minutes, args.general, log)
    students, said = train_students(
        teacher, args.prefix, args.minutes, args.source, args.seed, log, args.sets, only
    )
    translated = [  # one line per entry of data.source: sentences, seconds
        (int(n.replace(",", "")), int(t))
        for n, t in re.findall(r"([\d,]+) translated in (\d+) s \(", said)
    ]
    runs = {"teacher": teacher} | students
    figures = {key: measure(name, args.dev, args.out, log) for key, name in runs.items()}
    shutil.copy(log, args.out / "commands.last.log")
    print("| model | steps | greedy BLEU / chrF | shipped BLEU / chrF | int8 sent/s greedy 1 / 2 "
          "threads | shipped 1 / 2 | model.bin / directory MB | start s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for key, row in figures.items():
        print(f"| {key} ({runs[key]}) | {int(row['step']):,} "
              f"| {row['greedy_bleu']:.1f} / {row['greedy_chrf']:.1f} "
              f"| {row['shipped_bleu']:.1f} / {row['shipped_chrf']:.1f} "
              f"| {row['greedy_sps_1']:,.0f} / {row['greedy_sps_2']:,.0f} "
              f"| {row['shipped_sps_1']:,.0f} / {row['shipped_sps_2']:,.0f} "
              f"| {row['model_mb']:.2f} / {row['size_mb']:.2f} "
              f"| {row['start_s']:.2f} |")  # fmt: skip
    if translated:
        sentences, seconds = sum(n for n, _ in translated), sum(t for _, t in translated)
        print(f"corpus translated by the teacher: {sentences:,} sentences in {seconds} s "
              f"({sentences / max(seconds, 1):,.0f} sentences/s)")  # fmt: skip
    accounts = [line for line in said.splitlines() if line.startswith("distilled ")]
    print(json.dumps({"runs": runs, "figures": figures, "translated": accounts}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
