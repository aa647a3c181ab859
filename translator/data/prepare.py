"""The data a run prepares once and reuses: split, tokenizers, encoded pairs (encoded.npz)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from translator.config import Config, TokenizerConfig
from translator.data.augment import swap_names
from translator.data.batching import BilingualDataset
from translator.data.clean import FilterStats, clean_pairs, split_indices
from translator.data.read import Pair, read_pairs
from translator.data.tokenizer import load_tokenizer, save_tokenizer, train_tokenizer
from translator.errors import DataError
from translator.run.paths import RunPaths

log = logging.getLogger("translator")


@dataclass
class PreparedData:
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    train: BilingualDataset
    valid: BilingualDataset
    valid_pairs: list[Pair]
    """The raw text of each validation example, aligned with `valid`."""
    stats: FilterStats


def prepare_data(config: Config, paths: RunPaths) -> PreparedData:
    """Read, clean and split the corpus; train (or reuse) the tokenizers; encode and filter.

    The result is cached in the run directory (encoded.npz) and reused while the corpus file and
    the data settings are unchanged, so a resumed run starts without re-reading the corpus.
    """
    key = _cache_key(config)
    cached = load_encoded(paths, key)
    if cached is not None:
        return cached
    stats = FilterStats()
    pairs = clean_pairs(read_pairs(config.data), stats, config.data)
    train_idx, valid_idx = load_or_make_split(paths.split, len(pairs), config)
    train_pairs = [pairs[i] for i in train_idx]
    valid_pairs = [pairs[i] for i in valid_idx]

    if paths.tokenizer("src").is_file() and paths.tokenizer("tgt").is_file():
        src_tok, tgt_tok = (
            load_tokenizer(paths.tokenizer("src")),
            load_tokenizer(paths.tokenizer("tgt")),
        )
    else:
        src_tok, tgt_tok = train_tokenizers(train_pairs, config.tokenizer)
        save_tokenizer(src_tok, paths.tokenizer("src"))
        save_tokenizer(tgt_tok, paths.tokenizer("tgt"))

    swapped = swap_names(train_pairs, config.data.swap_names, config.train.seed)
    train_ds, kept_train = encode_pairs(
        train_pairs + swapped, src_tok, tgt_tok, config.data.max_len, stats
    )
    # Swapped pairs are extras: one dropped as too long is no line of the user's data lost.
    stats.name_swapped = sum(i >= len(train_pairs) for i in kept_train)
    stats.too_long -= len(swapped) - stats.name_swapped
    valid_ds, kept = encode_pairs(valid_pairs, src_tok, tgt_tok, config.data.max_len, stats)
    if len(train_ds) == 0:
        raise DataError(
            f"data.source {config.data.source}: no training pairs left after filtering "
            f"({stats.summary()}); check data.lang_src/lang_tgt and data.max_len"
        )
    data = PreparedData(src_tok, tgt_tok, train_ds, valid_ds, [valid_pairs[i] for i in kept], stats)
    save_encoded(paths, key, data)
    return data


def train_tokenizers(pairs: list[Pair], cfg: TokenizerConfig) -> tuple[Tokenizer, Tokenizer]:
    """The source and target tokenizers, trained on `pairs` (the training split only); with
    `shared`, one tokenizer trained on both sides serves as both."""
    if cfg.shared:
        both = train_tokenizer(
            (text for pair in pairs for text in pair), cfg.min_freq, cfg.size, cfg.kind
        )
        return both, both
    return tuple(  # type: ignore[return-value]
        train_tokenizer((pair[side] for pair in pairs), cfg.min_freq, cfg.size, cfg.kind)
        for side in (0, 1)
    )


def _cache_key(config: Config) -> str:
    """Identifies the prepared data: data and tokenizer settings, seed, corpus file stat."""
    source = Path(config.data.source).expanduser()
    stat = source.stat() if source.is_file() else None
    ident = {
        "data": dataclasses.asdict(config.data),
        "tokenizer": dataclasses.asdict(config.tokenizer),
        "seed": config.train.seed,
        "file": [str(source.resolve()), stat.st_size, stat.st_mtime_ns] if stat else None,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


def save_encoded(paths: RunPaths, key: str, data: PreparedData) -> None:
    """Cache the encoded datasets and validation text as flat arrays (no pickle)."""
    arrays: dict[str, np.ndarray] = {"key": np.array(key)}
    for split, ds in (("train", data.train), ("valid", data.valid)):
        for side, seqs in (("src", ds.src_ids), ("tgt", ds.tgt_ids)):
            arrays[f"{split}_{side}_ids"] = np.fromiter(
                (i for seq in seqs for i in seq), dtype=np.int32
            )
            arrays[f"{split}_{side}_len"] = np.array([len(q) for q in seqs], dtype=np.int32)
    arrays["valid_text"] = np.array([t for pair in data.valid_pairs for t in pair], dtype=str)
    arrays["stats"] = np.array(dataclasses.astuple(data.stats), dtype=np.int64)
    tmp = paths.encoded.with_name(".encoded.tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(paths.encoded)


def load_encoded(paths: RunPaths, key: str) -> PreparedData | None:
    """The cached prepared data, or None when missing, stale or unreadable."""
    files = (paths.encoded, paths.tokenizer("src"), paths.tokenizer("tgt"))
    if not all(f.is_file() for f in files):
        return None
    try:
        with np.load(paths.encoded, allow_pickle=False) as z:
            if str(z["key"]) != key:
                return None
            datasets = {}
            for split in ("train", "valid"):
                sides = [
                    _unflatten(z[f"{split}_{side}_ids"], z[f"{split}_{side}_len"])
                    for side in ("src", "tgt")
                ]
                datasets[split] = BilingualDataset(*sides)
            text = z["valid_text"].tolist()
            stats = FilterStats(*z["stats"].tolist())
    except (OSError, ValueError, KeyError):
        return None
    return PreparedData(
        load_tokenizer(paths.tokenizer("src")),
        load_tokenizer(paths.tokenizer("tgt")),
        datasets["train"],
        datasets["valid"],
        list(zip(text[0::2], text[1::2], strict=True)),
        stats,
    )


def _unflatten(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    ends = np.cumsum(lengths).tolist()
    starts = [0, *ends[:-1]]
    values = flat.tolist()
    return [values[a:b] for a, b in zip(starts, ends, strict=True)]


def load_or_make_split(path: Path, n_pairs: int, config: Config) -> tuple[list[int], list[int]]:
    """The run's recorded train/validation split, made (seeded) and recorded on first use."""
    if path.is_file():
        record = json.loads(path.read_text())
        if record["n_pairs"] != n_pairs:
            raise DataError(
                f"{path}: the run was split over {record['n_pairs']:,} pairs but the corpus now "
                f"has {n_pairs:,}; the data changed since the run started (start a new --run)"
            )
        valid = record["valid"]
        valid_set = set(valid)
        return [i for i in range(n_pairs) if i not in valid_set], valid
    train, valid = split_indices(n_pairs, config.data.valid_size, config.train.seed)
    record = {"n_pairs": n_pairs, "seed": config.train.seed, "valid": valid}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)
    return train, valid


def encode_pairs(
    pairs: list[Pair], src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int, stats: FilterStats
) -> tuple[BilingualDataset, list[int]]:
    """Encode pairs; drop (and count) those with a side longer than `max_len` tokens."""
    src_ids = [e.ids for e in src_tok.encode_batch([s for s, _ in pairs])] if pairs else []
    tgt_ids = [e.ids for e in tgt_tok.encode_batch([t for _, t in pairs])] if pairs else []
    kept = [
        i
        for i, (s, t) in enumerate(zip(src_ids, tgt_ids, strict=True))
        if 0 < len(s) <= max_len and 0 < len(t) <= max_len
    ]
    stats.too_long += len(pairs) - len(kept)
    return BilingualDataset([src_ids[i] for i in kept], [tgt_ids[i] for i in kept]), kept
