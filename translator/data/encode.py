"""Encoding pairs with both tokenizers, keeping those whose sides are 1..max_len tokens long;
writing training pairs into a store (with BPE-dropout encodings)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
from tokenizers import Tokenizer

from translator.config import TokenizerConfig
from translator.data.batching import BilingualDataset
from translator.data.clean import FilterStats
from translator.data.read import Pair
from translator.data.tokenizer import copy_tokenizer, with_bpe_dropout

if TYPE_CHECKING:
    from translator.data.store import StoreWriter


def encode_kept(
    pairs: list[Pair], src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int
) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """Both sides' ids, and the positions of the pairs whose sides are 1..max_len tokens long."""
    if not pairs:
        return [], [], []
    src = token_ids(src_tok, [s for s, _ in pairs])
    tgt = token_ids(tgt_tok, [t for _, t in pairs])
    keep = [
        i
        for i, (s, t) in enumerate(zip(src, tgt, strict=True))
        if 0 < len(s) <= max_len and 0 < len(t) <= max_len
    ]
    return src, tgt, keep


def for_clean_text(src_tok: Tokenizer, tgt_tok: Tokenizer) -> tuple[Tokenizer, Tokenizer]:
    """Copies of the tokenizers without their normalizer, for text that cleaning has already put
    in its form (`data.normalize: nfc` and single spaces, so NFC, `\\s+` -> ` ` and the strip are
    no-ops): the same ids, a sixth less time (measured on the shared corpus)."""
    copies: dict[int, Tokenizer] = {}
    for tok in (src_tok, tgt_tok):
        if id(tok) not in copies:
            copy = copy_tokenizer(tok)
            copy.normalizer = None
            copies[id(tok)] = copy
    return copies[id(src_tok)], copies[id(tgt_tok)]


def encode_ahead(
    chunks: Iterable[list[Pair]], src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int
) -> Iterator[tuple[list[Pair], list[list[int]], list[list[int]], list[int]]]:
    """`encode_kept` of each chunk, with the chunk: one chunk encoded in a thread while the caller
    stores the one before and makes the next (the library's encoder leaves Python's lock free), so
    the Python work around encoding runs while the encoder does."""
    with ThreadPoolExecutor(1, thread_name_prefix="encode") as pool:
        pending: tuple[list[Pair], Future] | None = None
        for chunk in chunks:
            ahead = (chunk, pool.submit(encode_kept, chunk, src_tok, tgt_tok, max_len))
            if pending is not None:
                yield pending[0], *pending[1].result()
            pending = ahead
        if pending is not None:
            yield pending[0], *pending[1].result()


def encode_pairs(
    pairs: list[Pair], src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int, stats: FilterStats
) -> tuple[BilingualDataset, list[int]]:
    """Encode pairs in memory; drop (and count) those with a side longer than `max_len` tokens."""
    src, tgt, keep = encode_kept(pairs, src_tok, tgt_tok, max_len)
    stats.too_long += len(pairs) - len(keep)
    return BilingualDataset([src[i] for i in keep], [tgt[i] for i in keep]), keep


def token_ids(tokenizer: Tokenizer, texts: list[str]) -> list[list[int]]:
    """The ids of each text, encoded in parallel by the tokenizers library (without offsets)."""
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    return [e.ids for e in encode(texts)]


class TrainWriter:
    """Appends training pairs to the store: their ids as encoded, or with BPE-dropout
    (`tokenizer.dropout`), `dropout_copies` encodings of their text, each drawn afresh; an
    encoding that comes out longer than `max_len` is replaced by the plain one, so every copy
    holds every pair."""

    def __init__(
        self,
        writer: StoreWriter,
        tokenizers: tuple[Tokenizer, Tokenizer],
        cfg: TokenizerConfig,
        max_len: int,
    ) -> None:
        self.writer, self.max_len = writer, max_len
        self.copies = cfg.dropout_copies if cfg.dropout else 0
        self.dropout = _with_dropout(tokenizers, cfg.dropout) if cfg.dropout else None

    def __call__(
        self,
        pairs: list[Pair],
        src: list[list[int]],
        tgt: list[list[int]],
        keep: list[int],
        entry: np.ndarray | None = None,
    ) -> None:
        """Append the pairs at `keep` (their plain ids `src`, `tgt`; `entry`: the entry of
        data.source of each kept pair, with several entries)."""
        src, tgt = [src[i] for i in keep], [tgt[i] for i in keep]
        if self.dropout is None:
            self.writer.append("train", src, tgt, entry=entry)
            return
        texts = [pairs[i] for i in keep]
        for copy in range(self.copies):
            drop_src = token_ids(self.dropout[0], [s for s, _ in texts])
            drop_tgt = token_ids(self.dropout[1], [t for _, t in texts])
            self.writer.append(
                "train",
                [d if len(d) <= self.max_len else p for d, p in zip(drop_src, src, strict=True)],
                [d if len(d) <= self.max_len else p for d, p in zip(drop_tgt, tgt, strict=True)],
                copy=copy,
                entry=entry,
            )


def _with_dropout(tokenizers: tuple[Tokenizer, Tokenizer], rate: float) -> tuple[Tokenizer, ...]:
    """BPE-dropout copies of the tokenizers (one copy when both sides share one)."""
    src, tgt = tokenizers
    drop_src = with_bpe_dropout(src, rate)
    return drop_src, drop_src if tgt is src else with_bpe_dropout(tgt, rate)
