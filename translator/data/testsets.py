"""Sets scored but never trained on: `train.eval_sets` during training, `validate --data FILE`.

A set is a whole file in any format `data.source` takes, read as it is (no cleaning, no
deduplication): its target side is the reference, as sacreBLEU would be given it by hand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tokenizers import Tokenizer

from translator.config import Config, DataConfig
from translator.data.batching import BilingualDataset
from translator.data.encode import encode_kept
from translator.data.read import Pair, iter_source, resolve_sources
from translator.errors import DataError


@dataclass
class EvalSet:
    """A named set: its encoded pairs (those within data.max_len) and their text, aligned."""

    name: str
    dataset: BilingualDataset
    pairs: list[Pair]
    n_read: int
    """Pairs in the file, before the ones over data.max_len were left out."""


def read_test_pairs(path: str, cfg: DataConfig, key: str) -> list[Pair]:
    """Every pair of one file (or dataset); an error names `key` (the option or config key)."""
    one = dataclasses.replace(cfg, source=path)
    try:
        pairs = [pair for source in resolve_sources(one) for pair in iter_source(source, one)]
    except DataError as exc:
        raise DataError(f"{key}: {str(exc).replace('data.source: ', '')}") from None
    if not pairs:
        raise DataError(f"{key}: {path} holds no sentence pairs")
    return pairs


def read_eval_sets(config: Config) -> dict[str, list[Pair]]:
    """The pairs of each of `train.eval_sets`, read before anything is written."""
    return {
        name: read_test_pairs(path, config.data, f"train.eval_sets.{name}")
        for name, path in (config.train.eval_sets or {}).items()
    }


def encode_eval_sets(
    sets: dict[str, list[Pair]], src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int
) -> list[EvalSet]:
    """Each set encoded with the run's tokenizers; pairs with a side over `max_len` are left
    out, as from the validation split."""
    out = []
    for name, pairs in sets.items():
        src, tgt, keep = encode_kept(pairs, src_tok, tgt_tok, max_len)
        dataset = BilingualDataset([src[i] for i in keep], [tgt[i] for i in keep])
        out.append(EvalSet(name, dataset, [pairs[i] for i in keep], len(pairs)))
    return out
