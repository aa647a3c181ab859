"""Data: load a parallel corpus (hub or local file), clean, split, bucket, collate -> Batch."""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import torch

from translator.config import DataConfig
from translator.errors import DataError
from translator.normalize import accent_lexicon, nfc, restore_accents
from translator.tokenizer import EOS_ID, PAD_ID, SOS_ID

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


@dataclass
class FilterStats:
    """How many pairs each filter removed."""

    read: int = 0
    normalized: int = 0
    empty: int = 0
    duplicate: int = 0
    too_long: int = 0
    name_swapped: int = 0

    def summary(self) -> str:
        swapped = f"; {self.name_swapped:,} name-swapped pairs added" if self.name_swapped else ""
        return (
            f"{self.read:,} pairs read; dropped {self.empty:,} with an empty side, "
            f"{self.duplicate:,} duplicates, {self.too_long:,} too long; "
            f"{self.normalized:,} changed by normalisation{swapped}"
        )


def clean_pairs(
    pairs: Sequence[Pair], stats: FilterStats, cfg: DataConfig | None = None
) -> list[Pair]:
    """Normalise (whitespace, `data.normalize`, `data.restore_accents`); drop pairs with an empty
    side and (with `data.dedup`) exact duplicates."""
    cfg = cfg or DataConfig()
    stats.read = len(pairs)
    normalized = normalize_pairs(pairs, cfg)
    stats.normalized = sum(a != b for a, b in zip(pairs, normalized, strict=True))
    seen: set[Pair] = set()
    out = []
    for src, tgt in normalized:
        pair = (" ".join(src.split()), " ".join(tgt.split()))
        if not pair[0] or not pair[1]:
            stats.empty += 1
        elif cfg.dedup and pair in seen:
            stats.duplicate += 1
        else:
            seen.add(pair)
            out.append(pair)
    return out


def normalize_pairs(pairs: Sequence[Pair], cfg: DataConfig) -> list[Pair]:
    """Both sides in Unicode NFC (`data.normalize`), and the Italian side's apostrophe-written
    accents restored (`data.restore_accents`), with a lexicon of accented words from the corpus."""
    out = [(nfc(s), nfc(t)) for s, t in pairs] if cfg.normalize == "nfc" else list(pairs)
    if cfg.restore_accents:
        for side, lang in enumerate((cfg.lang_src, cfg.lang_tgt)):
            if lang != "it":
                continue
            lexicon = accent_lexicon(pair[side] for pair in out)
            for n, pair in enumerate(out):
                fixed = restore_accents(pair[side], lexicon)
                if fixed != pair[side]:
                    out[n] = (fixed, pair[1]) if side == 0 else (pair[0], fixed)
    return out


def split_indices(n: int, valid_size: int, seed: int) -> tuple[list[int], list[int]]:
    """A seeded train/validation split of range(n); validation keeps at most half the data."""
    valid_size = min(valid_size, n // 2)
    order = np.random.default_rng(seed).permutation(n)
    return sorted(order[valid_size:].tolist()), sorted(order[:valid_size].tolist())


# --------------------------------------------------------------------------- dataset, batches


class BilingualDataset:
    """Encoded pairs; item i: encoder input [SOS] src [EOS], decoder input [SOS] tgt, label
    tgt [EOS]."""

    def __init__(self, src_ids: list[list[int]], tgt_ids: list[list[int]]) -> None:
        assert len(src_ids) == len(tgt_ids)
        self.src_ids = src_ids
        self.tgt_ids = tgt_ids

    def __len__(self) -> int:
        return len(self.src_ids)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        src, tgt = self.src_ids[i], self.tgt_ids[i]
        return {
            "encoder_input": [SOS_ID, *src, EOS_ID],
            "decoder_input": [SOS_ID, *tgt],
            "label": [*tgt, EOS_ID],
        }

    def src_lengths(self) -> np.ndarray:
        """Encoder input lengths (specials included)."""
        return np.fromiter((len(s) + 2 for s in self.src_ids), dtype=np.int64, count=len(self))

    def tgt_lengths(self) -> np.ndarray:
        """Decoder input lengths (specials included)."""
        return np.fromiter((len(t) + 1 for t in self.tgt_ids), dtype=np.int64, count=len(self))


@dataclass
class Batch:
    """A padded batch. src: (B, S); tgt_in, tgt_out: (B, T)."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    n_src_tokens: int
    n_tgt_tokens: int

    def to(self, device: torch.device) -> Batch:
        return Batch(
            self.src.to(device, non_blocking=True),
            self.tgt_in.to(device, non_blocking=True),
            self.tgt_out.to(device, non_blocking=True),
            self.n_src_tokens,
            self.n_tgt_tokens,
        )

    @property
    def padded_tokens(self) -> int:
        return self.src.numel() + self.tgt_out.numel()


def collate(
    items: Sequence[dict[str, list[int]]], src_pad_id: int = PAD_ID, tgt_pad_id: int = PAD_ID
) -> Batch:
    """Pad a list of dataset items to the batch's own longest sequence."""
    src = _pad([it["encoder_input"] for it in items], src_pad_id)
    tgt_in = _pad([it["decoder_input"] for it in items], tgt_pad_id)
    tgt_out = _pad([it["label"] for it in items], tgt_pad_id)
    n_src = sum(len(it["encoder_input"]) for it in items)
    n_tgt = sum(len(it["label"]) for it in items)
    return Batch(src, tgt_in, tgt_out, n_src, n_tgt)


def _pad(seqs: Sequence[list[int]], pad_id: int) -> torch.Tensor:
    out = np.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=np.int64)
    for row, seq in enumerate(seqs):
        out[row, : len(seq)] = seq
    return torch.from_numpy(out)


class TokenBatchSampler:
    """Groups examples of similar length into batches of at most `batch_tokens` padded tokens.

    Each epoch's batches are a pure function of (seed, epoch): a resumed run replays them exactly.
    """

    def __init__(
        self,
        src_lengths: np.ndarray,
        tgt_lengths: np.ndarray,
        batch_tokens: int,
        seed: int,
        shuffle: bool = True,
    ) -> None:
        self.src_lengths = src_lengths
        self.tgt_lengths = tgt_lengths
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.shuffle = shuffle

    def batches(self, epoch: int) -> list[list[int]]:
        """The list of index batches for `epoch`."""
        rng = np.random.default_rng([self.seed, epoch])
        n = len(self.src_lengths)
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        # stable sort by target length, then source length: ties keep the random order
        order = order[np.lexsort((self.src_lengths[order], self.tgt_lengths[order]))]
        batches, current, longest = [], [], 0
        for i in order.tolist():
            length = max(self.src_lengths[i], self.tgt_lengths[i])
            if current and (len(current) + 1) * max(longest, length) > self.batch_tokens:
                batches.append(current)
                current, longest = [], 0
            current.append(i)
            longest = max(longest, length)
        if current:
            batches.append(current)
        if self.shuffle:
            batches = [batches[j] for j in rng.permutation(len(batches))]
        return batches


def shard_batches(batches: list[list[int]], rank: int, world_size: int) -> list[list[int]]:
    """This rank's share of an epoch's batches: every rank gets the same number, every example
    lands on exactly one rank. Rank r takes batches r, r + W, r + 2W, ... of `split_evenly`."""
    return split_evenly(batches, world_size)[rank::world_size]


def split_evenly(batches: list[list[int]], world_size: int) -> list[list[int]]:
    """Batches split in two (largest first) until they divide evenly among `world_size` ranks.

    Splitting keeps the order of the examples: the batches, laid end to end, hold the same
    sequence for every world size.
    """
    batches = list(batches)
    while len(batches) % world_size:
        largest = max(range(len(batches)), key=lambda j: len(batches[j]))
        if len(batches[largest]) < 2:
            raise ValueError(f"too few examples to give each of {world_size} ranks a batch")
        big = batches.pop(largest)
        half = len(big) // 2
        batches[largest:largest] = [big[:half], big[half:]]
    return batches


def drop_examples(batches: list[list[int]], n: int) -> list[list[int]]:
    """The batches without the first `n` examples of their sequence (a batch may be cut)."""
    out, seen = [], 0
    for batch in batches:
        if seen + len(batch) > n:
            out.append(batch[max(0, n - seen) :])
        seen += len(batch)
    return out


def examples_consumed(
    batches: list[list[int]], offset: int, batch_in_epoch: int, world_size: int
) -> int:
    """Examples of an epoch used once every one of `world_size` ranks took `batch_in_epoch` of
    its batches, the epoch's first `offset` examples having been used before."""
    remaining = split_evenly(drop_examples(batches, offset), world_size)
    return offset + sum(len(b) for b in remaining[: batch_in_epoch * world_size])
