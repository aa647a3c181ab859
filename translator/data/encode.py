"""Encoding pairs with both tokenizers, keeping those whose sides are 1..max_len tokens long."""

from __future__ import annotations

from tokenizers import Tokenizer

from translator.data.batching import BilingualDataset
from translator.data.clean import FilterStats
from translator.data.read import Pair


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
