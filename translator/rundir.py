"""A run's directories and the data it prepares once and reuses: split, tokenizers, encoded pairs.

runs/<name>/      TensorBoard events
weights/<name>/   config.yaml, split.json, tokenizer_{src,tgt}.json, latest.pt, best.pt
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from translator.checkpoint import BEST, LATEST
from translator.config import Config
from translator.data import (
    BilingualDataset,
    FilterStats,
    Pair,
    clean_pairs,
    read_pairs,
    split_indices,
)
from translator.errors import ConfigError, DataError
from translator.tokenizer import load_tokenizer, save_tokenizer, train_tokenizer

log = logging.getLogger("translator")


@dataclass(frozen=True)
class RunPaths:
    name: str
    log_dir: Path
    weights_dir: Path

    @classmethod
    def create(
        cls, name: str, runs_root: Path = Path("runs"), weights_root: Path = Path("weights")
    ):
        if not name or "/" in name or name.startswith("."):
            raise ConfigError(f"--run {name!r}: a run name is a plain directory name, e.g. cpu")
        return cls(name, runs_root / name, weights_root / name)

    @property
    def config(self) -> Path:
        return self.weights_dir / "config.yaml"

    @property
    def split(self) -> Path:
        return self.weights_dir / "split.json"

    @property
    def latest(self) -> Path:
        return self.weights_dir / LATEST

    @property
    def best(self) -> Path:
        return self.weights_dir / BEST

    def tokenizer(self, side: str) -> Path:
        return self.weights_dir / f"tokenizer_{side}.json"

    def make(self) -> None:
        """Create both directories, with a one-line error when that is not possible."""
        for d in (self.log_dir, self.weights_dir):
            try:
                d.mkdir(parents=True, exist_ok=True)
                probe = d / ".write-test"
                probe.write_text("")
                probe.unlink()
            except OSError as exc:
                raise ConfigError(
                    f"cannot write to {d}: {exc.strerror}; choose another directory"
                ) from None


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
    """Read, clean and split the corpus; train (or reuse) the tokenizers; encode and filter."""
    stats = FilterStats()
    pairs = clean_pairs(read_pairs(config.data), stats, dedup=config.data.dedup)
    train_idx, valid_idx = load_or_make_split(paths.split, len(pairs), config)
    train_pairs = [pairs[i] for i in train_idx]
    valid_pairs = [pairs[i] for i in valid_idx]

    if paths.tokenizer("src").is_file() and paths.tokenizer("tgt").is_file():
        src_tok, tgt_tok = (
            load_tokenizer(paths.tokenizer("src")),
            load_tokenizer(paths.tokenizer("tgt")),
        )
    else:
        tok_cfg = config.tokenizer
        src_tok = train_tokenizer((s for s, _ in train_pairs), tok_cfg.min_freq, tok_cfg.max_vocab)
        tgt_tok = train_tokenizer((t for _, t in train_pairs), tok_cfg.min_freq, tok_cfg.max_vocab)
        save_tokenizer(src_tok, paths.tokenizer("src"))
        save_tokenizer(tgt_tok, paths.tokenizer("tgt"))

    train_ds, _ = encode_pairs(train_pairs, src_tok, tgt_tok, config.data.max_len, stats)
    valid_ds, kept = encode_pairs(valid_pairs, src_tok, tgt_tok, config.data.max_len, stats)
    if len(train_ds) == 0:
        raise DataError(
            f"data.source {config.data.source}: no training pairs left after filtering "
            f"({stats.summary()}); check data.lang_src/lang_tgt and data.max_len"
        )
    return PreparedData(src_tok, tgt_tok, train_ds, valid_ds, [valid_pairs[i] for i in kept], stats)


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
