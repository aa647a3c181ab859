"""A run's paths (run/paths.py): a fresh start clears every file an earlier attempt left."""

from __future__ import annotations

from pathlib import Path

from translator.data.store import WORD_TABLES as STORE_TABLES
from translator.run.paths import RunPaths


def test_a_fresh_start_clears_every_file_an_earlier_attempt_left(tmp_path: Path) -> None:
    """What a fresh start clears includes the tables the store copies into the run."""
    paths = RunPaths.create("x", tmp_path / "runs", tmp_path / "weights")
    paths.make()
    left = ["split.json", "store.json", "parent.json", "teacher.json", *STORE_TABLES,
            "tokenizer_src.json", "tokenizer_tgt.json"]  # fmt: skip
    for name in left:
        (paths.weights_dir / name).write_text("{}")
    paths.discard_prepared()
    assert sorted(p.name for p in paths.weights_dir.iterdir()) == []
