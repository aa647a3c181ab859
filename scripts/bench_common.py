"""What the benchmark scripts share: the default corpus, the served load, the table of figures."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/en-it/opensubs.jsonl"


def request_plan(data: Path, requests: int, distinct: int) -> tuple[list[list[str]], list[int]]:
    """The load of scripts/bench_serve.py: `distinct` requests of 1 to 8 English sentences drawn
    from the last 2,000 lines of `data`, and the order of `requests` sends (indexes into them)."""
    rng = random.Random(0)
    lines = data.read_text(encoding="utf-8").splitlines()[-2000:]
    sentences = [json.loads(line)["translation"]["en"] for line in lines]
    batches = [rng.sample(sentences, rng.randint(1, 8)) for _ in range(distinct)]
    return batches, [rng.randrange(distinct) for _ in range(requests)]


def print_figures(figures: dict[str, Any]) -> None:
    """One `name  value` row per figure, then the whole dict as one JSON line."""
    width = max(map(len, figures))
    for key, value in figures.items():
        text = f"{value:,.4g}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {text}")
    print(json.dumps(figures))
