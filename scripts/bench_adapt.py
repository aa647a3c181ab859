"""Adapting a trained translator to a small in-domain corpus, against training from nothing.

    python scripts/bench_adapt.py            # all of it: about 2 h 20 min on 2 cores
    python scripts/bench_adapt.py --parent adapt_parent --only c,d   # reuse a trained parent

Each run is scored as soon as it is trained, and the figures so far are kept in
OUT/figures.json; a run already trained (its latest.pt exists) is scored, not trained again.

Runs, each through the `translator` command as a user would type it (names: PREFIX + letter):
  parent  configs/cpu.yaml on the general corpus, --parent-minutes (30)
  a       configs/cpu.yaml from nothing on the in-domain corpus alone, parent + adapt minutes (40)
  b       configs/cpu.yaml from nothing on both corpora, plain concatenation, the same minutes
  c       configs/adapt.yaml from the parent on the in-domain corpus, --minutes (10)
  d       the same, mixed fine-tuning: the in-domain corpus plus a --share of the general one
With --blend 0.1,0.25, c and d are also scored blended that share of the way back to the parent
(`translator average --with-parent`, written as weights/NAME/blendSHARE.pt).
Each is then scored with `translator validate --data` on the dev set (in-domain) and on the
parent's own validation split (general domain), which b and d do not train on (their general
corpus is the parent's without those pairs: OUT/PARENT-general-train.jsonl), at beam 4 and
with the shipped decoding. Prints a markdown table (BLEU / chrF, steps), then one JSON line.
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

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/en-it"


def sh(args: list[str], log: Path, stderr: bool = False) -> str:
    """Run a translator command, its output appended to `log`; stop the benchmark if it fails.
    Returns its stdout (and its stderr after it, with `stderr`)."""
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    with log.open("a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(args)}\n{done.stdout}{done.stderr}\n")
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stderr[-2000:]}")
    print(f"  {time.perf_counter() - start:6.0f} s  {' '.join(args)}", file=sys.stderr)
    return done.stdout + (done.stderr if stderr else "")


def train(name: str, config: str, minutes: float, sets: list[str], log: Path) -> None:
    if (ROOT / "weights" / name / "latest.pt").is_file():
        print(f"  run {name} is trained already: kept", file=sys.stderr)
        return
    args = ["translator", "train", "--config", config, "--run", name]
    args += ["--set", f"train.max_minutes={minutes}", *(a for s in sets for a in ("--set", s))]
    sh(args, log)


def score(
    name: str, data: Path, shipped: bool, log: Path, checkpoint: Path | None = None
) -> tuple[float, float, int]:
    """BLEU, chrF and the checkpoint's step, from `translator validate --data`."""
    args = ["translator", "validate", "--run", name, "--data", str(data)]
    if checkpoint is not None:
        args += ["--checkpoint", str(checkpoint)]
    if not shipped:
        args += ["--beam", "4", "--set", "decode.mbr=false"]
    out = sh(args, log)
    bleu = float(re.search(r"^BLEU\s+([\d.]+)", out, re.M).group(1))  # type: ignore[union-attr]
    chrf = float(re.search(r"^chrF\s+([\d.]+)", out, re.M).group(1))  # type: ignore[union-attr]
    step = int(re.search(r"\(step ([\d,]+)\)", out).group(1).replace(",", ""))  # type: ignore[union-attr]
    return bleu, chrf, step


def general_valid(parent: str, out: Path) -> Path:
    """The parent's own validation split (source<TAB>target), copied out of its store."""
    record = json.loads((ROOT / "weights" / parent / "store.json").read_text(encoding="utf-8"))
    target = out / f"{parent}-valid.tsv"
    shutil.copyfile(Path(record["path"]) / "valid.tsv", target)
    return target


def general_train(parent: str, general: Path, valid: Path, out: Path) -> Path:
    """The general corpus without the pairs of the parent's validation split, for the runs that
    train on it besides the parent (b, d): their "general" score would otherwise be taken on
    pairs they trained on. A raw pair is left out when its cleaned form (the parent's data
    settings) is one of the split's."""
    from translator.config import load_config
    from translator.data.clean import clean_chunk, make_cleaner
    from translator.data.read import read_local_pairs

    target = out / f"{parent}-general-train.jsonl"
    if target.is_file():
        return target
    cfg = load_config(ROOT / "weights" / parent / "config.yaml").data
    held = {tuple(line.split("\t")) for line in valid.read_text(encoding="utf-8").splitlines()}
    pairs = read_local_pairs(general, cfg.lang_src, cfg.lang_tgt)
    cleaner = make_cleaner(cfg, pairs)
    kept = [p for p in pairs if not any(c in held for c in clean_chunk([p], cleaner).pairs)]
    tmp = target.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for en, it in kept:
            f.write(json.dumps({"translation": {cfg.lang_src: en, cfg.lang_tgt: it}}) + "\n")
    tmp.replace(target)
    print(f"  {len(pairs) - len(kept):,} pairs of {general.name} held out for b and d "
          f"(the parent's {len(held):,} validation pairs)", file=sys.stderr)  # fmt: skip
    return target


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--general", type=Path, default=DATA / "opensubs.jsonl")
    p.add_argument("--domain", type=Path, default=DATA / "everyday.jsonl")
    p.add_argument("--dev", type=Path, default=DATA / "tatoeba-dev.jsonl")
    p.add_argument("--parent", help="a trained parent run to reuse (default: train one)")
    p.add_argument("--parent-minutes", type=float, default=30)
    p.add_argument("--minutes", type=float, default=10, help="adaptation minutes (c, d)")
    p.add_argument("--share", type=float, default=0.25, help="weight of the general corpus in d")
    p.add_argument("--only", default="c,d,a,b", help="which runs besides the parent, in order")
    p.add_argument("--prefix", default="adapt_")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--set", dest="sets", action="append", default=[], help="for c and d")
    p.add_argument(
        "--blend",
        default="",
        help="shares, e.g. 0.1,0.25: also score c and d blended that far back to the parent "
        "(translator average --with-parent), beam 4",
    )
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_adapt")
    args = p.parse_args()
    os.chdir(ROOT)  # runs go to ROOT/runs and ROOT/weights, as from the README's commands
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "commands.log"
    seed = [f"train.seed={args.seed}"]
    cpu, adapt = str(ROOT / "configs/cpu.yaml"), str(ROOT / "configs/adapt.yaml")
    parent = args.parent or f"{args.prefix}parent"
    train(parent, cpu, args.parent_minutes, [f"data.source={args.general}", *seed], log)
    general = general_valid(parent, args.out)
    rest = general_train(parent, args.general, general, args.out)  # b and d never see `general`
    total = args.parent_minutes + args.minutes
    both = f"[{args.domain}, {rest}]"
    mixed = f"[{{path: {args.domain}, weight: 1}}, {{path: {rest}, weight: {args.share}}}]"
    watch = f"train.eval_sets={{general: {general}}}"
    init = f"train.init_from={parent}"
    plan = {
        # cpu.yaml stops at 10 epochs, which a small corpus reaches in minutes: the time binds
        "a": (cpu, total, [f"data.source={args.domain}", "train.epochs=1000"]),
        "b": (cpu, total, [f"data.source={both}", "train.epochs=1000"]),
        "c": (adapt, args.minutes, [init, f"data.source={args.domain}", watch, *args.sets]),
        "d": (adapt, args.minutes, [init, f"data.source={mixed}", watch, *args.sets]),
    }
    chosen = [k for k in args.only.split(",") if k]
    runs = {"parent": parent, **{key: f"{args.prefix}{key}" for key in chosen}}
    figures: dict[str, dict[str, float]] = {}
    for key, name in list(runs.items()):  # each scored once trained, figures kept as they come
        if key != "parent":
            config, minutes, sets = plan[key]
            train(name, config, minutes, [*sets, *seed], log)
        figures[key] = score_run(name, args.dev, general, log)
        for share in args.blend.split(",") if key in ("c", "d") and args.blend else []:
            figures[f"{key}+{share}"] = score_blend(name, float(share), args.dev, general, log)
            runs[f"{key}+{share}"] = name
        (args.out / "figures.json").write_text(json.dumps({"runs": runs, "figures": figures}))
        print_table({key: figures[key]}, runs, args)
    print_table(figures, runs, args)
    print(json.dumps({"runs": runs, "figures": figures}))


def score_run(name: str, dev: Path, general: Path, log: Path) -> dict[str, float]:
    """Dev (in-domain) and general-domain BLEU / chrF, beam 4 and shipped, and the step.
    Where the run ships beam 4 without MBR (adapt.yaml), the two are one decoding, run once.

    A run scored before on the same files at the same checkpoint is not scored again (a reused
    parent is scored once, not by every invocation): OUT/scores.json keeps each run's row."""
    kept = log.parent / "scores.json"
    scores = json.loads(kept.read_text(encoding="utf-8")) if kept.is_file() else {}
    latest = ROOT / "weights" / name / "latest.pt"
    key = f"{name} {latest.stat().st_mtime_ns} {dev} {general}"
    if key in scores:
        return scores[key]
    from translator.config import load_config

    decode = load_config(ROOT / "weights" / name / "config.yaml").decode
    same = decode.beam == 4 and not decode.mbr  # shipped is beam 4 (adapt.yaml): decode once
    row: dict[str, float] = {}
    for label, data in (("dev", dev), ("general", general)):
        bleu, chrf, row["step"] = score(name, data, False, log)
        row |= {f"{label}_b4_bleu": bleu, f"{label}_b4_chrf": chrf}
        if not same:
            bleu, chrf, row["step"] = score(name, data, True, log)
        row |= {f"{label}_shipped_bleu": bleu, f"{label}_shipped_chrf": chrf}
    kept.write_text(json.dumps(scores | {key: row}, indent=1), encoding="utf-8")
    return row


def score_blend(name: str, share: float, dev: Path, general: Path, log: Path) -> dict[str, float]:
    """The run's average blended `share` of the way back to its parent, written beside its
    checkpoints (weights/NAME/blendSHARE.pt), scored at beam 4 (adapt.yaml's shipped decoding)."""
    from translator.config import load_config

    last = load_config(ROOT / "weights" / name / "config.yaml").train.average_last
    blended = Path("weights") / name / f"blend{share:g}.pt"
    sh(["translator", "average", "--run", name, "--last", str(last), "--with-parent",
        f"{share:g}", "--output", str(blended)], log)  # fmt: skip
    row: dict[str, float] = {}
    for label, data in (("dev", dev), ("general", general)):
        bleu, chrf, row["step"] = score(name, data, False, log, blended)
        for decoding in ("b4", "shipped"):
            row |= {f"{label}_{decoding}_bleu": bleu, f"{label}_{decoding}_chrf": chrf}
    return row


def print_table(figures: dict[str, dict[str, float]], runs: dict[str, str], args) -> None:
    what = {
        "parent": f"{args.parent_minutes:g} min from nothing on {args.general.name}",
        "a": f"{args.parent_minutes + args.minutes:g} min from nothing on {args.domain.name}",
        "b": f"{args.parent_minutes + args.minutes:g} min from nothing on both, concatenated",
        "c": f"parent + {args.minutes:g} min on {args.domain.name}",
        "d": f"parent + {args.minutes:g} min mixed ({args.domain.name} 1, "
        f"{args.general.name} {args.share:g})",
    }
    print("| run | what | steps | dev beam 4 | dev shipped | general beam 4 | general shipped |")
    print("|---|---|---|---|---|---|---|")
    for key, row in figures.items():
        base, _, share = key.partition("+")
        if share:
            what[key] = f"{base}, blended {share} of the way back to the parent (beam 4)"
        cells = [
            f"{row[f'{s}_{d}_bleu']:.1f} / {row[f'{s}_{d}_chrf']:.1f}"
            for s in ("dev", "general")
            for d in ("b4", "shipped")
        ]
        print(f"| {key} ({runs[key]}) | {what[key]} | {int(row['step']):,} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
