"""Reading a parallel corpus: the hub dataset, or a local .jsonl / .parquet / .tsv file -> pairs."""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from translator.config import DataConfig
from translator.errors import DataError

Pair = tuple[str, str]
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet", ".tsv", ".txt")


# --------------------------------------------------------------------------- reading


def read_pairs(cfg: DataConfig) -> list[Pair]:
    """Read (source, target) sentence pairs from the hub dataset or local file named by `cfg`."""
    path = Path(cfg.source).expanduser()
    if path.exists():
        return read_local_pairs(path, cfg.lang_src, cfg.lang_tgt)
    if path.suffix in LOCAL_SUFFIXES or os.sep in cfg.source:
        raise DataError(f"data.source: file not found: {cfg.source}")
    return read_hub_pairs(cfg)


def read_local_pairs(path: Path, lang_src: str, lang_tgt: str) -> list[Pair]:
    """Read pairs from .jsonl (opus_books schema), .parquet, or tab-separated src<TAB>tgt text."""
    if path.is_dir():
        raise DataError(
            f"data.source: {path} is a directory; point it at a .jsonl, .parquet or .tsv"
        )
    if path.suffix == ".parquet":
        pairs = _read_parquet(path, lang_src, lang_tgt)
    else:
        lines = _read_lines(path)
        if path.suffix in (".jsonl", ".json"):
            pairs = [_parse_json_line(line, path, n, lang_src, lang_tgt) for n, line in lines]
        else:
            pairs = [_parse_tsv_line(line, path, n) for n, line in lines]
    if not pairs:
        raise DataError(f"{path}: the file holds no sentence pairs")
    return pairs


def _read_lines(path: Path) -> list[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers; a non-UTF-8 byte names its line."""
    out = []
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                # "utf-8-sig" on line 1: a byte-order mark (Windows editors) is not part of the text
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{path}:{n}: not valid UTF-8 (byte {raw[exc.start]:#04x} at column "
                    f"{exc.start + 1}); re-encode the file as UTF-8"
                ) from None
            if line.strip():
                out.append((n, line))
    return out


def _parse_json_line(line: str, path: Path, n: int, src: str, tgt: str) -> Pair:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{n}: malformed JSON ({exc.msg}); fix or delete the line") from None
    if not isinstance(record, dict):
        raise DataError(f'{path}:{n}: expected a JSON object like {{"translation": {{...}}}}')
    pair = record.get("translation", record)
    if not isinstance(pair, dict):
        raise DataError(f'{path}:{n}: "translation" must be an object of language: text')
    for lang in (src, tgt):
        if not isinstance(pair.get(lang), str):
            found = ", ".join(map(str, pair)) or "none"
            raise DataError(
                f"{path}:{n}: no {lang!r} text in the pair (languages found: {found}); "
                "check data.lang_src / data.lang_tgt"
            )
    return pair[src], pair[tgt]


def _parse_tsv_line(line: str, path: Path, n: int) -> Pair:
    fields = line.split("\t")
    if len(fields) != 2:
        raise DataError(
            f"{path}:{n}: expected 2 tab-separated fields (source<TAB>target), found {len(fields)}"
        )
    return fields[0], fields[1]


def _read_parquet(path: Path, src: str, tgt: str) -> list[Pair]:
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None
    pairs = []
    for n, row in enumerate(rows, start=1):
        pair = row.get("translation", row)
        if (
            not isinstance(pair, dict)
            or not isinstance(pair.get(src), str)
            or not isinstance(pair.get(tgt), str)
        ):
            raise DataError(f"{path}: row {n} has no {src!r}/{tgt!r} text; check data.lang_src/tgt")
        pairs.append((pair[src], pair[tgt]))
    return pairs


def read_hub_pairs(cfg: DataConfig) -> list[Pair]:
    """Load the `train` split of a Hugging Face hub dataset; fail fast and clearly when offline."""
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
    name = cfg.hub_config or f"{cfg.lang_src}-{cfg.lang_tgt}"
    cache_dir = dataset_cache_dir(cfg)
    try:
        ds = datasets.load_dataset(cfg.source, name, split="train", cache_dir=str(cache_dir))
    except Exception as exc:  # connection, DNS, missing dataset: all end the same way for a user
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        if not online:
            reason = "the hub cannot be reached from this machine and no cached copy was found"
        raise DataError(
            f"data.source: could not load {cfg.source!r} ({name}) from the Hugging Face hub "
            f"({reason}); to use local files, pass --set data.source=path/to/pairs.jsonl "
            "(opus_books schema), .parquet or .tsv"
        ) from None
    return [(row[cfg.lang_src], row[cfg.lang_tgt]) for row in ds["translation"]]


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
    candidates = [cfg.cache_dir] if cfg.cache_dir else []
    candidates.append(str(Path.home() / ".cache" / "translator" / "datasets"))
    candidates.append(os.path.join(os.environ.get("TMPDIR", "/tmp"), "translator-datasets"))
    for candidate in candidates:
        path = Path(candidate).expanduser()
        try:
            path.mkdir(parents=True, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    raise DataError("data.cache_dir: no writable cache directory found; set data.cache_dir")


# --------------------------------------------------------------------------- cleaning, splitting
