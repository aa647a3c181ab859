"""BPE-dropout (`tokenizer.dropout`): training pairs are stored in several segmentations, each
epoch trains on one of them, and nothing else (validation, the saved tokenizers, decoding) ever
sees a dropped merge."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, make_pairs, train_tiny

from translator.config import Config, load_config
from translator.data.batching import TokenBatchSampler
from translator.data.build import prepare_store
from translator.data.prepare import data_summary, load_prepared
from translator.data.store import config_ident
from translator.data.tokenizer import load_tokenizer, train_tokenizer, with_bpe_dropout
from translator.errors import ConfigError


def bpe_config(tiny_config: Config, **tokenizer: object) -> Config:
    values = {"kind": "bpe", "vocab_size": 320, **tokenizer}
    return dataclasses.replace(
        tiny_config, tokenizer=dataclasses.replace(tiny_config.tokenizer, **values)
    )


def test_dropout_changes_the_pieces_never_the_text() -> None:
    texts = [s for pair in make_pairs(300) for s in pair]
    plain = train_tokenizer(texts, min_freq=1, max_vocab=320, kind="bpe")
    sentence = "the big red house and seven cats ."
    before = plain.encode(sentence).ids
    dropped = with_bpe_dropout(plain, 0.3)
    segmentations = {tuple(dropped.encode(sentence).ids) for _ in range(50)}
    assert len(segmentations) > 1
    assert all(dropped.decode(list(ids)) == sentence for ids in segmentations)
    assert all(len(ids) >= len(before) for ids in segmentations)  # only merges are skipped
    assert plain.encode(sentence).ids == before  # the original is left as it was
    word = train_tokenizer(texts, min_freq=1, kind="word")
    with pytest.raises(ValueError, match="BPE"):
        with_bpe_dropout(word, 0.1)


def test_the_store_holds_every_training_pair_once_per_copy(tiny_config: Config) -> None:
    plain = load_prepared(prepare_store(bpe_config(tiny_config)))
    config = bpe_config(tiny_config, dropout=0.3, dropout_copies=3)
    data = load_prepared(prepare_store(config))
    src_tok, tgt_tok = data.src_tokenizer, data.tgt_tokenizer

    def texts(dataset, rows) -> Counter:
        return Counter(
            (src_tok.decode(dataset.src_ids[i]), tgt_tok.decode(dataset.tgt_ids[i])) for i in rows
        )

    assert plain.train.copies is None
    copies = np.asarray(data.train.copies)
    plain_text = texts(plain.train, range(len(plain.train)))
    differ = 0
    for copy in range(3):
        rows = np.flatnonzero(copies == copy)
        assert texts(data.train, rows) == plain_text  # the same pairs, the same text
        differ += sum(
            data.train.src_ids[i] != src_tok.encode(src_tok.decode(data.train.src_ids[i])).ids
            for i in rows
        )
        assert max(data.train.src_lengths()[rows]) - 2 <= config.data.max_len
    assert differ > 0  # training pairs were segmented otherwise
    assert len(data.train) == 3 * len(plain.train)
    # validation is encoded as decoding will encode it: plainly
    assert list(data.valid.src_ids) == list(plain.valid.src_ids)
    assert list(data.valid.tgt_ids) == list(plain.valid.tgt_ids)
    assert f"{len(plain.train):,} (each in 3 BPE-dropout encodings) train" in data_summary(data)


def test_an_epoch_takes_one_copy_of_each_pair() -> None:
    copies = np.array([0, 1, 2] * 40, dtype=np.uint8)
    lengths = np.random.default_rng(0).integers(3, 20, len(copies))
    sampler = TokenBatchSampler(lengths, lengths, 64, seed=1, copies=copies)
    for epoch in range(5):
        used = np.concatenate(sampler.batches(epoch))
        assert sorted(used.tolist()) == np.flatnonzero(copies == epoch % 3).tolist()
    assert [b.tolist() for b in sampler.batches(4)] == [b.tolist() for b in sampler.batches(4)]


def test_a_run_keeps_and_decodes_with_plain_tokenizers(tmp_path: Path) -> None:
    sets = ["tokenizer.kind=bpe", "tokenizer.vocab_size=320", "tokenizer.dropout=0.3"]
    weights = train_tiny(tmp_path, 20, *sets, "tokenizer.dropout_copies=2")
    for side in ("src", "tgt"):
        path = weights / f"tokenizer_{side}.json"
        assert json.loads(path.read_text())["model"]["dropout"] is None
        tok = load_tokenizer(path)
        sentence = "the big red house and seven cats ."
        assert len({tuple(tok.encode(sentence).ids) for _ in range(30)}) == 1


def test_config_checks_and_unchanged_store_keys(tiny_config: Config) -> None:
    base = ROOT / "configs" / "tiny.yaml"
    bpe = ["tokenizer.kind=bpe", "tokenizer.dropout=0.1"]
    with pytest.raises(ConfigError, match="tokenizer.dropout .* needs tokenizer.kind bpe"):
        load_config(base, ["tokenizer.dropout=0.1"])
    with pytest.raises(ConfigError, match="tokenizer.dropout_copies must be 1 to 255"):
        load_config(base, [*bpe, "tokenizer.dropout_copies=0"])
    with pytest.raises(ConfigError, match=r"tokenizer.dropout must be in \[0, 1\)"):
        load_config(base, ["tokenizer.kind=bpe", "tokenizer.dropout=1.0"])
    # without dropout, the store's key is what it was before the option existed
    assert set(config_ident(bpe_config(tiny_config))["tokenizer"]).isdisjoint(
        {"dropout", "dropout_copies"}
    )
    assert config_ident(bpe_config(tiny_config, dropout=0.1))["tokenizer"]["dropout"] == 0.1
