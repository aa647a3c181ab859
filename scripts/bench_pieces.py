"""How the shape of a batch decides CTranslate2's speed: the sentences of scripts/bench_serve.py's
load, decoded in-process (no HTTP) in batches of the size its 8 clients keep in flight, cut in
different ways, against the same sentences sorted by length.

    python scripts/bench_pieces.py --model exports/cpu-int8 [--served 36 --repeats 2]

Each way is timed `--repeats` times in turn (the machine's load moves; the best of each is kept):

- offline: all sentences sorted by length, batches of 32, all queued at once (as translate does);
- sorted, N: the same, batches of N = half of --served (like lengths, the served size per worker);
- served, halves: --served sentences at a time in request order, dealt out in two mixed halves
  (longest first, in turn: the server before), the next batch only once both are back;
- served, pieces of K: the same batches cut in like-length pieces of K, queued together, so a worker
  that ends a short piece takes the next (K = --served / 4: two pieces per worker, the server now).

CTranslate2 time only: the sentences are tokenized once beforehand, and every batch is queued
as decode_exported queues it (`queue_batch`), greedy. Prints sentences/s per way and the ratios to
offline, then one JSON line with the figures.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench_common import DEFAULT_DATA, print_figures, request_plan

from translator.export.engine import load_exported, output_limit, queue_batch
from translator.inference.text import encode_sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="an exported model directory")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--served", type=int, default=36, help="sentences per served batch")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    batches, plan = request_plan(args.data, args.requests, 200)
    sentences = [sentence for i in plan for sentence in batches[i]]
    model = load_exported(args.model)
    encoded = encode_sources(model.src_tokenizer, sentences, model.max_source_tokens)
    tokens = [[model.src_tokens[t] for t in ids] for ids in encoded]
    limits = [output_limit(len(ids) - 2, model.config) for ids in encoded]

    def rate(rounds: list[list[list[int]]]) -> float:
        """Sentences/s when each round's pieces are queued together and waited for together."""
        start = time.perf_counter()
        for pieces in rounds:
            queued = [
                queue_batch(model, [tokens[i] for i in rows], max(limits[i] for i in rows), 1)
                for rows in pieces
            ]
            for results in queued:
                for result in results:
                    result.result()
        return len(tokens) / (time.perf_counter() - start)

    def longest_first(rows: list[int]) -> list[int]:
        return sorted(rows, key=lambda i: len(tokens[i]), reverse=True)

    def cut(rows: list[int], size: int) -> list[list[int]]:
        return [rows[start : start + size] for start in range(0, len(rows), size)]

    everything = longest_first(list(range(len(tokens))))
    served = cut(list(range(len(tokens))), args.served)
    half, piece = max(1, args.served // 2), max(1, -(-args.served // 4))
    ways = {
        "offline": [cut(everything, 32)],
        f"sorted, {half}": [cut(everything, half)],
        f"served {args.served}, halves": [
            [longest_first(rows)[k::2] for k in range(min(2, len(rows)))] for rows in served
        ],
        f"served {args.served}, pieces of {piece}": [
            cut(longest_first(rows), piece) for rows in served
        ],
    }
    best = dict.fromkeys(ways, 0.0)
    for _ in range(args.repeats):
        for name, rounds in ways.items():
            best[name] = max(best[name], rate(rounds))
    figures: dict[str, object] = {
        "model": str(args.model),
        "arithmetic": model.arithmetic,
        "workers": model.translator.num_translators,
        "sentences": len(tokens),
    }
    for name, value in best.items():
        figures[f"{name}: sentences/s"] = value
        figures[f"{name}: x offline"] = value / best["offline"]
    print_figures(figures)


if __name__ == "__main__":
    main()
