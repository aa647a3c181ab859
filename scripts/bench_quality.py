"""Quality per CPU-minute: train a config for M minutes of wall time on the shared corpus, then
report validation BLEU and chrF (greedy), with the steps and tokens it saw.

    python scripts/bench_quality.py --config configs/cpu.yaml --minutes 30
    python scripts/bench_quality.py --config configs/cpu.yaml --minutes 10 --set model.d_model=384

With --test FILE (.tsv source<TAB>reference, or .jsonl), the held-out sentences of FILE are also
translated and scored, separately from the validation split. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from bench_common import DEFAULT_DATA, print_figures

from translator.data import read_local_pairs
from translator.evaluate import evaluate_translations
from translator.metrics import corpus_scores
from translator.predict import find_checkpoint, load_model, translate_sentences
from translator.train import train_command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--minutes", required=True, type=float)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--test", type=Path, help="extra held-out pairs, scored separately")
    parser.add_argument("--run", help="run name (default: quality_<config>_<minutes>m)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()

    run = args.run or f"quality_{args.config.stem}_{args.minutes:g}m"
    overrides = [
        f"data.source={args.data}",
        f"train.max_minutes={args.minutes}",
        "train.max_steps=100000000",
        *args.overrides,
    ]
    start = time.perf_counter()
    trainer = train_command(args.config, overrides, run, None, None)
    wall = time.perf_counter() - start
    # Score the final weights (latest), as trained for exactly the budget.
    model = trainer.model
    with trainer.autocast():
        _, valid = evaluate_translations(
            model, trainer.data, trainer.config.decode, trainer.device, beam=1, progress=False
        )
    figures = {
        "config": str(args.config),
        "overrides": args.overrides,
        "minutes": args.minutes,
        "wall_s": wall,
        "steps": trainer.progress.step,
        "tokens_seen": trainer.progress.tokens_seen,
        "epochs": trainer.progress.tokens_seen
        / max(1, sum(len(t) + 1 for t in trainer.data.train.tgt_ids)),
        "valid_loss": trainer.progress.best_valid_loss,
        "valid_bleu": valid.bleu,
        "valid_chrf": valid.chrf,
    }
    if args.test:
        pairs = read_local_pairs(
            args.test, trainer.config.data.lang_src, trainer.config.data.lang_tgt
        )
        checkpoint, run_dir = find_checkpoint(
            run, trainer.paths.latest, trainer.paths.weights_dir.parent
        )
        loaded = load_model(checkpoint, run_dir, torch.device("cpu"))
        hyps = translate_sentences(loaded, [s for s, _ in pairs], beam=1)
        test = corpus_scores(hyps, [t for _, t in pairs])
        figures.update(test_sentences=len(pairs), test_bleu=test.bleu, test_chrf=test.chrf)
        for (src, ref), hyp in list(zip(pairs, hyps, strict=True))[:10]:
            print(f"src: {src}\nref: {ref}\nhyp: {hyp}\n")
    figures["bleu_signature"] = valid.bleu_signature
    print_figures(figures)


if __name__ == "__main__":
    main()
