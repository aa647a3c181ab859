"""`translator prepare`: a config's data prepared once, into the store its runs share."""

from __future__ import annotations

from pathlib import Path


def prepare_command(config_path: Path | None, overrides: list[str]) -> None:
    """`translator prepare`: make (or find) the store for a config, and say where it is."""
    from translator.config import load_config
    from translator.data.build import prepare_store
    from translator.data.prepare import data_summary, load_prepared

    config = load_config(config_path, overrides)
    data = load_prepared(prepare_store(config))
    size = sum(f.stat().st_size for f in data.store.iterdir()) if data.store else 0
    print(data_summary(data, config.data.weights()))
    print(f"store: {data.store} ({size / 2**20:,.1f} MiB), for every run on this data")
