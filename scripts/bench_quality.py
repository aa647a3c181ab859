"""Quality per CPU-minute: train a config for M minutes of wall time on the shared corpus, then
report validation BLEU and chrF, with the steps and tokens it saw.

    python scripts/bench_quality.py --config configs/cpu.yaml --minutes 30
    python scripts/bench_quality.py --config configs/cpu.yaml --minutes 10 --set model.d_model=384

The validation split is scored with the config's own decoding (valid_bleu), and with greedy and
beam 4, each with [UNK] allowed and banned (valid_bleu_greedy, ..., valid_bleu_beam4_nounk). With
--test FILE (.tsv source<TAB>reference, or .jsonl), the held-out sentences of FILE are scored the
same way, separately from the validation split (test_bleu, ...). --score-only scores the run's
latest checkpoint on --test without training. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import torch
from bench_common import DEFAULT_DATA, print_figures

from translator.data import read_local_pairs
from translator.evaluate import evaluate_translations
from translator.metrics import corpus_scores
from translator.predict import LoadedModel, find_checkpoint, load_model, translate_sentences
from translator.train_run import train_command

# (name, beam, ban_unk): the decodings every run is scored with, besides its config's own.
DECODINGS = [
    ("greedy", 1, False),
    ("beam4", 4, False),
    ("greedy_nounk", 1, True),
    ("beam4_nounk", 4, True),
]


def score_test(loaded: LoadedModel, test: Path) -> dict[str, float]:
    """BLEU and chrF on the pairs of `test`, with the run's decoding and with each of DECODINGS;
    prints the first sentences of the last one."""
    pairs = read_local_pairs(test, loaded.config.data.lang_src, loaded.config.data.lang_tgt)
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    figures: dict[str, float] = {"test_sentences": len(pairs)}
    for name, beam, ban_unk in [("config", None, loaded.config.decode.ban_unk), *DECODINGS]:
        decode = dataclasses.replace(loaded.config.decode, ban_unk=ban_unk)
        variant = dataclasses.replace(
            loaded, config=dataclasses.replace(loaded.config, decode=decode)
        )
        hyps = translate_sentences(variant, sources, beam=beam)
        scores = corpus_scores(hyps, references)
        figures[f"test_bleu_{name}"] = scores.bleu
        figures[f"test_chrf_{name}"] = scores.chrf
    for src, ref, hyp in list(zip(sources, references, hyps, strict=True))[:10]:
        print(f"src: {src}\nref: {ref}\nhyp: {hyp}\n")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--minutes", required=True, type=float)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--test", type=Path, help="extra held-out pairs, scored separately")
    parser.add_argument("--run", help="run name (default: quality_<config>_<minutes>m)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument(
        "--score-only", action="store_true", help="score the run's latest checkpoint on --test"
    )
    args = parser.parse_args()

    run = args.run or f"quality_{args.config.stem}_{args.minutes:g}m"
    if args.score_only:
        checkpoint, run_dir = find_checkpoint(run, Path("weights") / run / "latest.pt")
        loaded = load_model(checkpoint, run_dir, torch.device("cpu"))
        print_figures({"run": run, "step": loaded.step, **score_test(loaded, args.test)})
        return
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
    model, decode = trainer.model, trainer.config.decode
    valid = {}
    with trainer.autocast():
        for name, beam, ban_unk in DECODINGS:
            cfg = dataclasses.replace(decode, ban_unk=ban_unk)
            _, valid[name] = evaluate_translations(
                model, trainer.data, cfg, trainer.device, beam=beam, progress=False
            )
        _, valid["config"] = evaluate_translations(
            model, trainer.data, decode, trainer.device, progress=False
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
        "decode": f"beam {decode.beam}, ban_unk {decode.ban_unk}",
        "valid_bleu": valid["config"].bleu,
        "valid_chrf": valid["config"].chrf,
    }
    for name, _, _ in DECODINGS:
        figures[f"valid_bleu_{name}"] = valid[name].bleu
        figures[f"valid_chrf_{name}"] = valid[name].chrf
    if args.test:
        checkpoint, run_dir = find_checkpoint(
            run, trainer.paths.latest, trainer.paths.weights_dir.parent
        )
        figures.update(score_test(load_model(checkpoint, run_dir, torch.device("cpu")), args.test))
    figures["bleu_signature"] = valid["config"].bleu_signature
    print_figures(figures)


if __name__ == "__main__":
    main()
