"""Quality per CPU-minute: train a config for M minutes of wall time on the shared corpus, then
score the checkpoint that `translator translate` would use (averaged.pt when the run averages,
else best.pt) on the validation split and on held-out pairs.

    python scripts/bench_quality.py --config configs/cpu.yaml --minutes 30 \
        --test ../shared/data/en-it/tatoeba-dev.jsonl
    python scripts/bench_quality.py --config configs/cpu.yaml --minutes 10 --set model.d_model=384
    python scripts/bench_quality.py --run cpu --score-only \
        --test ../shared/data/en-it/tatoeba-dev.jsonl

Each set is scored with the config's own decoding and with greedy search: sacreBLEU (with its
signature) and chrF, and the share of output tokens that are [UNK]. --test FILE takes .jsonl
(opus_books schema, such as the Tatoeba dev set) or .tsv (source<TAB>reference). --score-only
scores an existing run without training. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import torch
from bench_common import DEFAULT_DATA, print_figures

from translator.data.read import read_local_pairs
from translator.inference.predict import LoadedModel, load_model, translate_sentences
from translator.metrics import corpus_scores
from translator.run.paths import find_checkpoint
from translator.specials import UNK
from translator.training.train import train_command


def score(loaded: LoadedModel, pairs: list[tuple[str, str]], name: str) -> dict[str, object]:
    """BLEU, chrF and [UNK] share of `pairs`, with the run's decoding and with greedy search."""
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    figures: dict[str, object] = {f"{name}_sentences": len(pairs)}
    decode = loaded.config.decode
    for label, beam in (("config", None), ("greedy", 1)):
        start = time.perf_counter()
        hyps = translate_sentences(loaded, sources, beam=beam)
        scores = corpus_scores(hyps, references)
        words = [w for h in hyps for w in h.split()]
        figures[f"{name}_bleu_{label}"] = scores.bleu
        figures[f"{name}_chrf_{label}"] = scores.chrf
        figures[f"{name}_unk_share_{label}"] = sum(UNK in w for w in words) / max(1, len(words))
        figures[f"{name}_decode_s_{label}"] = time.perf_counter() - start
        if label == "config":
            shown = hyps
            figures[f"{name}_decoding"] = (
                f"beam {decode.beam}, alpha {decode.alpha}, ban_unk {decode.ban_unk}, "
                f"mbr {decode.mbr}"
            )
            figures["bleu_signature"] = scores.bleu_signature
            figures["chrf_signature"] = scores.chrf_signature
    for src, ref, hyp in list(zip(sources, references, shown, strict=True))[:8]:
        print(f"src: {src}\nref: {ref}\nhyp: {hyp}\n")
    return figures


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)  # as the CLI
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path)
    parser.add_argument("--minutes", type=float)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--test", type=Path, help="held-out pairs (.jsonl or .tsv), scored apart")
    parser.add_argument("--run", help="run name (default: quality_<config>_<minutes>m)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--score-only", action="store_true", help="score --run without training")
    parser.add_argument("--checkpoint", type=Path, help="with --score-only: this checkpoint")
    args = parser.parse_args()

    figures: dict[str, object] = {}
    if args.score_only:
        run = args.run
    else:
        if args.config is None or args.minutes is None:
            parser.error("--config and --minutes are needed to train (or use --score-only)")
        run = args.run or f"quality_{args.config.stem}_{args.minutes:g}m"
        overrides = [
            f"data.source={args.data}",
            f"train.max_minutes={args.minutes}",
            "train.max_steps=100000000",
            *args.overrides,
        ]
        start = time.perf_counter()
        trainer = train_command(args.config, overrides, run, None, None)
        p = trainer.progress
        figures |= {
            "config": str(args.config),
            "overrides": args.overrides,
            "minutes": args.minutes,
            "wall_s": time.perf_counter() - start,
            "steps": p.step,
            "tokens_seen": p.tokens_seen,
            "epochs": p.tokens_seen / max(1, sum(len(t) + 1 for t in trainer.data.train.tgt_ids)),
            "valid_loss": p.best_valid_loss,
        }
    checkpoint, run_dir = find_checkpoint(run, args.checkpoint)
    loaded = load_model(checkpoint, run_dir, torch.device("cpu"))
    figures |= {"run": run, "checkpoint": checkpoint.name, "step": loaded.step}
    cfg = loaded.config.data
    if (run_dir / "encoded.npz").is_file() and not args.score_only:
        valid = trainer.data.valid_pairs
        figures |= score(loaded, valid, "valid")
    if args.test:
        figures |= score(loaded, read_local_pairs(args.test, cfg.lang_src, cfg.lang_tgt), "test")
    print_figures(figures)


if __name__ == "__main__":
    main()
