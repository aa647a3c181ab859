"""Encoding for the store: the normalizer-free copies give the tokenizers' own ids on cleaned
text, encoding a chunk ahead in a thread keeps every chunk with its own ids, and pairs too long
are dropped and counted."""

from __future__ import annotations

import random

import pytest
from helpers import make_pairs

from translator.config import DataConfig
from translator.data.clean import FilterStats, clean_chunk, make_cleaner
from translator.data.encode import encode_ahead, encode_kept, encode_pairs, for_clean_text
from translator.data.tokenizer import train_tokenizer
from translator.specials import UNK_ID

# Text that the normalizer would change if cleaning had not: combining accents, tabs, no-break and
# ideographic spaces, line separators, leading and trailing space, a literal special token.
AWKWARD = [
    ("  Cafe\u0301 \t au\u00a0lait ", "Il caffe\u0300  e' pronto\u3000"),
    ("He said:\u2028 [SOS] hello\x1c world", "Ha detto: [SOS] ciao\u2029mondo"),
    ("Zoe\u0308 's   book", "Il libro di Zoe\u0308 "),
    ("\u00c5ngstr\u00f6m\u2003unit", "unita'  di \u00c5ngstr\u00f6m"),
]


def cleaned(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    cfg = DataConfig(restore_accents=True, lang_src="en", lang_tgt="it")
    return clean_chunk(pairs, make_cleaner(cfg, pairs)).pairs


@pytest.mark.parametrize("kind", ["word", "bpe", "unigram"])
def test_the_copies_without_a_normalizer_give_the_same_ids_on_cleaned_text(kind: str) -> None:
    rng = random.Random(3)
    words = ["the", "caffè", "Zoë", "città", "perché", "[SOS]", "l'uomo", "e'", "naïve", "東京"]
    pairs = AWKWARD + [
        (" ".join(rng.choices(words, k=6)), "\t".join(rng.choices(words, k=5))) for _ in range(200)
    ]
    pairs = cleaned(pairs)
    tok = train_tokenizer((t for p in pairs for t in p), 1, 300, kind)
    plain, _ = for_clean_text(tok, tok)
    assert plain.normalizer is None and tok.normalizer is not None
    texts = [t for p in pairs for t in p]
    want = [e.ids for e in tok.encode_batch(texts)]
    assert [e.ids for e in plain.encode_batch(texts)] == want
    assert any(len(ids) > 1 for ids in want)
    raw = [t for p in AWKWARD for t in p]  # uncleaned, the normalizer matters: the check can fail
    assert [e.ids for e in plain.encode_batch(raw)] != [e.ids for e in tok.encode_batch(raw)]


def test_encoding_ahead_keeps_each_chunk_with_its_own_ids() -> None:
    rng = random.Random(5)
    pairs = [(f"word{rng.randrange(50)} " * rng.randrange(1, 9), f"parola{i}") for i in range(900)]
    tok = train_tokenizer((t for p in pairs for t in p), 1, 400, "bpe")
    chunks = [pairs[i : i + 70] for i in range(0, len(pairs), 70)]
    got = list(encode_ahead(iter(chunks), tok, tok, 6))
    assert [c for c, *_ in got] == chunks
    for chunk, src, tgt, keep in got:
        assert (src, tgt, keep) == encode_kept(chunk, tok, tok, 6)
    assert 0 < sum(len(k) for *_, k in got) < len(pairs)  # max_len 6 drops some


def test_encode_pairs_drops_and_counts_too_long_pairs() -> None:
    pairs = make_pairs(60, seed=1, max_words=8)
    src_tok = train_tokenizer((s for s, _ in pairs), min_freq=1)
    tgt_tok = train_tokenizer((t for _, t in pairs), min_freq=1)
    max_len = 5  # sentences of up to 4 words plus "." fit
    stats = FilterStats()
    ds, kept = encode_pairs(pairs, src_tok, tgt_tok, max_len, stats)
    expected = [i for i, (s, t) in enumerate(pairs) if len(s.split()) <= 5 and len(t.split()) <= 5]
    assert 0 < len(expected) < len(pairs)
    assert kept == expected
    assert len(ds) == len(kept)
    assert stats.too_long == len(pairs) - len(kept)
    for row, i in enumerate(kept):
        assert ds.src_ids[row] == src_tok.encode(pairs[i][0]).ids
        assert ds.tgt_ids[row] == tgt_tok.encode(pairs[i][1]).ids
        assert UNK_ID not in ds.src_ids[row] + ds.tgt_ids[row]


def test_encode_pairs_of_nothing() -> None:
    tok = train_tokenizer(["a b"], min_freq=1)
    stats = FilterStats()
    ds, kept = encode_pairs([], tok, tok, 10, stats)
    assert len(ds) == 0 and kept == [] and stats.too_long == 0
