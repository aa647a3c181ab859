"""Text as people type it: the dev set in each typed form, translated by a run, scored
case-insensitively, with its runaway outputs and leading dashes counted.

    python scripts/bench_robust.py --run cpu                 # one run
    python scripts/bench_robust.py --run before --run after  # one table row per run and form
    python scripts/bench_robust.py --run cpu --label guards-off \
        --set decode.recase=false --set decode.no_repeat_ngram=0   # decoding as before #36

Forms of the dev set's English side (seeded; the training uses its own draws): as written; ALL
CAPITALS; lower case without final punctuation; a typo in a quarter of the words (two letters
swapped, one dropped or one doubled). Each run is decoded with beam 4 and with its shipped
decoding, by PyTorch (`translator validate --run`) and by its int8 CTranslate2 export
(`translator validate --model`, exported first into OUT/RUN-int8). BLEU and chrF compare
lower-cased hypotheses with lower-cased references (sacreBLEU). A runaway output repeats a 2-8
character sequence four more times in a row, or is over three times its input's length; a
leading dash is an output that starts with a dash where its input does not.
Prints a markdown table, then one JSON line; OUT/figures.json keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import sacrebleu

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from translator.data.read import read_local_pairs  # noqa: E402
from translator.data.typed import unpunctuated, with_typos  # noqa: E402

DEV = ROOT.parent / "shared/data/en-it/tatoeba-dev.jsonl"
RUNAWAY = re.compile(r"(.{2,8}?)\1{4,}")
DASH = re.compile(r"^\s*[-–—]")
FORMS = {
    "as written": lambda s, rng: s,
    "ALL CAPITALS": lambda s, rng: s.upper(),
    "lower case, no final punctuation": lambda s, rng: unpunctuated(s.lower()),
    "a typo in a quarter of the words": lambda s, rng: with_typos(s, rng, 0.25),
}


def typed_sets(dev: Path, out: Path, seed: int) -> dict[str, tuple[Path, list[str], list[str]]]:
    """Each form of the dev set as a source<TAB>target file; its sources and references."""
    pairs = read_local_pairs(dev, "en", "it")
    sets = {}
    for n, (name, form) in enumerate(FORMS.items()):
        rng = random.Random(seed + n)
        sources = [form(src, rng) for src, _ in pairs]
        path = out / f"dev-{n}.tsv"
        lines = (f"{s}\t{t}\n" for s, (_, t) in zip(sources, pairs, strict=True))
        path.write_text("".join(lines), encoding="utf-8")
        sets[name] = (path, sources, [t for _, t in pairs])
    return sets


def run(args: list[str]) -> None:
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stderr[-2000:]}")


def figures(hypotheses: list[str], sources: list[str], references: list[str]) -> dict[str, float]:
    low = [h.lower() for h in hypotheses]
    refs = [[r.lower() for r in references]]
    runaway = sum(
        bool(RUNAWAY.search(h)) or len(h) > 3 * max(len(s), 1)
        for h, s in zip(hypotheses, sources, strict=True)
    )
    dashes = sum(
        bool(DASH.match(h)) and not DASH.match(s) for h, s in zip(hypotheses, sources, strict=True)
    )
    return {
        "bleu": round(sacrebleu.corpus_bleu(low, refs).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(low, refs).score, 2),
        "runaway": runaway,
        "dash": dashes,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", action="append", required=True, help="a trained run (repeatable)")
    p.add_argument("--dev", type=Path, default=DEV)
    p.add_argument("--seed", type=int, default=20261205)
    p.add_argument("--engines", default="pytorch,ct2", help="pytorch, ct2 or both")
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_robust")
    p.add_argument("--set", dest="sets", action="append", default=[], help="decode.* for all")
    p.add_argument("--label", default="", help="added to each run's name in the table")
    args = p.parse_args()
    sets = [a for s in args.sets for a in ("--set", s)]
    args.out.mkdir(parents=True, exist_ok=True)
    typed = typed_sets(args.dev, args.out, args.seed)
    kept = args.out / "figures.json"
    results: dict[str, dict[str, float]] = json.loads(kept.read_text()) if kept.is_file() else {}
    for name in args.run:
        model = args.out / f"{name}-int8"
        if "ct2" in args.engines and not model.is_dir():
            run(["translator", "export", "--run", name, "--output", str(model)])
        for engine in [e for e in ("pytorch", "ct2") if e in args.engines]:
            which = ["--run", name] if engine == "pytorch" else ["--model", str(model)]
            for decoding, extra in (("beam 4", ["--beam", "4", "--set", "decode.mbr=false"]),
                                    ("shipped", [])):  # fmt: skip
                for n, (form, (path, sources, refs)) in enumerate(typed.items()):
                    tag = f"{name}-{args.label}-{engine}-{decoding}-{n}".replace(" ", "_")
                    hyp = args.out / f"hyp-{tag}.txt"  # kept, to read the runaways
                    start = time.perf_counter()
                    run(["translator", "validate", *which, "--data", str(path),
                         "--output", str(hyp), *extra, *sets])  # fmt: skip
                    lines = hyp.read_text(encoding="utf-8").split("\n")[: len(sources)]
                    row = figures(lines, sources, refs) | {"seconds": time.perf_counter() - start}
                    label = f"{name} ({args.label})" if args.label else name
                    results[f"{label} | {engine} | {decoding} | {form}"] = row
                    print(f"  {name} {engine} {decoding} {form}: {row}", file=sys.stderr)
                    kept.write_text(json.dumps(results, indent=1))
    print_table(results)
    print(json.dumps(results))


def print_table(results: dict[str, dict[str, float]]) -> None:
    clean: dict[tuple[str, str, str], float] = {}
    print("| run | engine | decoding | input as typed | BLEU / chrF (lower-cased) | of clean "
          "| runaway | leading dash |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for key, row in results.items():
        name, engine, decoding, form = key.split(" | ")
        if form == "as written":
            clean[(name, engine, decoding)] = row["bleu"]
        base = clean.get((name, engine, decoding)) or float("nan")
        score = f"{row['bleu']:.1f} / {row['chrf']:.1f}"
        share = f"{100 * row['bleu'] / base:.0f}%"
        print(f"| {name} | {engine} | {decoding} | {form} | {score} | {share} "
              f"| {row['runaway']} | {row['dash']} |")  # fmt: skip


if __name__ == "__main__":
    main()
