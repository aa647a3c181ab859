"""Decoding throughput: batched cached greedy, batched beam 4, and a one-at-a-time uncached
baseline (the tutorial's way), all on the same model in the same run; with --model, also the
CTranslate2 export (greedy and beam) on the same sentences, and the wall time of
`translator translate --model DIR "Hello"` from process start.

    python scripts/bench_decode.py --run cpu --n 1000 [--model exports/cpu-int8]

Prints a table, then one JSON line with the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import torch
from bench_common import DEFAULT_DATA

from translator.data.tokenizer import decode_ids
from translator.inference.decode import greedy_decode
from translator.inference.predict import decode_in_batches, encode_sources, load_model
from translator.run.paths import find_checkpoint


def read_sources(path: Path, n: int, lang: str) -> list[str]:
    """The last `n` source sentences of a JSON Lines corpus (opus_books schema)."""
    lines = path.read_text(encoding="utf-8").splitlines()[-n:]
    return [json.loads(line)["translation"][lang] for line in lines]


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--weights-dir", type=Path, default=Path("weights"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument(
        "--baseline-n",
        type=int,
        default=100,
        help="sentences for the slow uncached one-at-a-time baseline (its rate is per sentence)",
    )
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument(
        "--batch-size", type=int, help="sentences per batch (default: the run's decode.batch_size)"
    )
    parser.add_argument("--model", type=Path, help="a `translator export` directory to compare")
    parser.add_argument("--hello-runs", type=int, default=5, help="timed `translate --model` runs")
    args = parser.parse_args()

    checkpoint, run_dir = find_checkpoint(args.run, None, args.weights_dir)
    loaded = load_model(checkpoint, run_dir, torch.device("cpu"))
    sentences = read_sources(args.data, args.n, loaded.config.data.lang_src)
    sources = encode_sources(loaded.src_tokenizer, sentences, loaded.max_source_tokens)
    cfg = loaded.config.decode
    if args.batch_size:
        cfg = dataclasses.replace(cfg, batch_size=args.batch_size)
    model = loaded.model

    def per_sentence_uncached() -> list[list[int]]:
        return [
            greedy_decode(
                model,
                torch.tensor([s]),
                cfg.max_len_a,
                cfg.max_len_b,
                use_cache=False,
                ban_unk=cfg.ban_unk,
            )[0]
            for s in sources[: args.baseline_n]
        ]

    detokenize = partial(decode_ids, loaded.tgt_tokenizer)  # decode.mbr compares texts
    decode_in_batches(model, sources[:64], cfg, loaded.device, 1)  # warm-up
    results = {}
    for name, fn, n in (
        (
            "greedy_batched_cached",
            lambda: decode_in_batches(model, sources, cfg, loaded.device, 1),
            len(sources),
        ),
        (
            f"beam{args.beam}_batched_cached",
            lambda: decode_in_batches(
                model, sources, cfg, loaded.device, args.beam, detokenize=detokenize
            ),
            len(sources),
        ),
        (
            "greedy_one_at_a_time_uncached",
            per_sentence_uncached,
            min(args.baseline_n, len(sources)),
        ),
    ):
        with torch.inference_mode():
            outputs, seconds = timed(fn)
        tokens = sum(len(o) + 1 for o in outputs)  # + [EOS]
        results[name] = {
            "sentences": n,
            "seconds": seconds,
            "sentences_per_s": n / seconds,
            "tokens_per_s": tokens / seconds,
        }
    if args.model:
        results |= bench_ctranslate2(args.model, sources, args.beam, cfg.batch_size)
    base = results["greedy_one_at_a_time_uncached"]["sentences_per_s"]
    greedy = results["greedy_batched_cached"]["sentences_per_s"]
    beam = results[f"beam{args.beam}_batched_cached"]["sentences_per_s"]
    figures = {
        "run": args.run,
        "checkpoint": str(checkpoint),
        "threads": torch.get_num_threads(),
        "batch_size": cfg.batch_size,
        "ban_unk": cfg.ban_unk,
        **{f"{k}_{m}": v for k, r in results.items() for m, v in r.items()},
        "speedup_greedy_vs_baseline": greedy / base,
        f"slowdown_beam{args.beam}_vs_greedy": greedy / beam,
    }
    if args.model:
        ct2_greedy = results["ct2_greedy"]["sentences_per_s"]
        ct2_beam = results[f"ct2_beam{args.beam}"]["sentences_per_s"]
        figures["ct2_speedup_greedy"] = ct2_greedy / greedy
        figures[f"ct2_speedup_beam{args.beam}"] = ct2_beam / beam
        figures["translate_model_hello_s"] = hello_seconds(args.model, args.hello_runs)
    print(f"{'method':<32} {'sentences':>9} {'seconds':>9} {'sent/s':>9} {'tok/s':>9}")
    for name, r in results.items():
        print(
            f"{name:<32} {r['sentences']:>9} {r['seconds']:>9.2f} "
            f"{r['sentences_per_s']:>9.1f} {r['tokens_per_s']:>9.1f}"
        )
    print(f"batched cached greedy / uncached one-at-a-time: {greedy / base:.1f}x sentences/s")
    print(f"beam {args.beam} is {greedy / beam:.2f}x slower than greedy")
    if args.model:
        print(f"CTranslate2 greedy / PyTorch batched greedy: {figures['ct2_speedup_greedy']:.1f}x")
        print(
            f"CTranslate2 beam {args.beam} / PyTorch beam {args.beam}: "
            f"{figures[f'ct2_speedup_beam{args.beam}']:.1f}x"
        )
        print(
            f'translator translate --model {args.model} "Hello": '
            f"{figures['translate_model_hello_s']:.2f} s (median of {args.hello_runs})"
        )
    print(json.dumps(figures))


def bench_ctranslate2(
    model_dir: Path, sources: list[list[int]], beam: int, batch_size: int
) -> dict[str, dict[str, float]]:
    """CTranslate2 greedy and beam over the same encoder inputs, on torch's thread count."""
    from translator.export.engine import decode_exported, load_exported

    model = load_exported(model_dir, threads=torch.get_num_threads())
    model.config = dataclasses.replace(
        model.config, decode=dataclasses.replace(model.config.decode, batch_size=batch_size)
    )
    decode_exported(model, sources[:64], 1)  # warm-up
    results = {}
    for name, size in (("ct2_greedy", 1), (f"ct2_beam{beam}", beam)):
        outputs, seconds = timed(lambda size=size: decode_exported(model, sources, size))
        tokens = sum(len(o) + 1 for o in outputs)
        results[name] = {
            "sentences": len(sources),
            "seconds": seconds,
            "sentences_per_s": len(sources) / seconds,
            "tokens_per_s": tokens / seconds,
        }
    return results


def hello_seconds(model_dir: Path, runs: int) -> float:
    """Median wall time of `translator translate --model DIR "Hello"`, process start to exit."""
    times = []
    for _ in range(runs):
        script = str(Path(sys.executable).with_name("translator"))  # the console script
        command = [script, "translate", "--model", str(model_dir)]
        start = time.perf_counter()
        subprocess.run([*command, "Hello"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    main()
