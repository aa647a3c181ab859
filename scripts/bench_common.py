"""What the benchmark scripts share: the default corpus, and their table of figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/en-it/opensubs.jsonl"


def print_figures(figures: dict[str, Any]) -> None:
    """One `name  value` row per figure, then the whole dict as one JSON line."""
    width = max(map(len, figures))
    for key, value in figures.items():
        text = f"{value:,.4g}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {text}")
    print(json.dumps(figures))
