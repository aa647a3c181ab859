"""The Hugging Face hub path: a dataset's `train` split, read in batches of its Arrow table."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

from translator.config import DataConfig
from translator.errors import DataError

BATCH_ROWS = 10_000  # rows per batch read from a hub dataset or a parquet file


def iter_hub_pairs(name: str, cfg: DataConfig) -> Iterator[tuple[str, str]]:
    """The pairs of hub dataset `name`, a batch of rows at a time (never one list of them all);
    fail fast and clearly when offline."""
    ds = _load(name, cfg)
    for batch in ds.iter(batch_size=BATCH_ROWS):
        for row in batch["translation"]:
            yield row[cfg.lang_src], row[cfg.lang_tgt]


def read_hub_pairs(cfg: DataConfig) -> list[tuple[str, str]]:
    """Every pair of the hub dataset named by `data.source` (small datasets and tests)."""
    assert isinstance(cfg.source, str)
    return list(iter_hub_pairs(cfg.source, cfg))


def _load(name: str, cfg: DataConfig):  # -> datasets.Dataset
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "20")
    online = _hub_reachable()
    if not online:
        # Offline mode: a copy already in the cache still loads; otherwise fail at once, not
        # after a minute of retries.
        os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    import datasets

    datasets.logging.set_verbosity_error()
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    config = cfg.hub_config or f"{cfg.lang_src}-{cfg.lang_tgt}"
    cache_dir = dataset_cache_dir(cfg)
    try:
        return datasets.load_dataset(name, config, split="train", cache_dir=str(cache_dir))
    except Exception as exc:  # connection, DNS, missing dataset: all end the same way for a user
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        if not online:
            reason = "the hub cannot be reached from this machine and no cached copy was found"
        raise DataError(
            f"data.source: could not load {name!r} ({config}) from the Hugging Face hub "
            f"({reason}); to use local files, pass --set data.source=path/to/pairs.jsonl "
            "(opus_books schema), .parquet, .tsv or a Moses prefix"
        ) from None


def _hub_reachable(timeout: float = 5.0) -> bool:
    """Whether the hub's host accepts a TCP connection (False at once when DNS fails)."""
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1":
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def dataset_cache_dir(cfg: DataConfig) -> Path:
    """A writable cache directory for `datasets` downloads."""
    home = Path.home() / ".cache" / "translator" / "datasets"
    return writable_dir([cfg.cache_dir, home, _tmp("translator-datasets")], "data.cache_dir")


def writable_dir(candidates: list[str | Path | None], key: str) -> Path:
    """The first of `candidates` that can be created and written to."""
    tried = [Path(c).expanduser() for c in candidates if c]
    for path in tried:
        try:
            path.mkdir(parents=True, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    raise DataError(f"{key}: cannot write to {tried[0]}; set {key} to a writable directory")


def _tmp(name: str) -> Path:
    return Path(os.environ.get("TMPDIR", "/tmp")) / name
