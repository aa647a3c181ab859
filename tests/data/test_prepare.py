"""Prepared data (data/prepare.py): the store found again by later runs and resumes, the recorded
split, tokenizers that learn nothing from the validation split, and a run's tokenizers kept
without BPE-dropout."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import FIXTURES, make_pairs, train_tiny, write_jsonl

from translator.config import Config, load_config
from translator.data.build import prepare_store
from translator.data.prepare import load_prepared, prepare_data
from translator.data.store import open_store
from translator.data.tokenizer import load_tokenizer
from translator.errors import DataError
from translator.model.transformer import build_model
from translator.run.paths import RunPaths
from translator.specials import UNK_ID


def test_a_second_run_finds_the_store_and_a_resume_reads_no_corpus(
    tiny_config: Config,
) -> None:
    paths = RunPaths.create("r")
    paths.make()
    fresh = prepare_data(tiny_config, paths)
    assert fresh.store is not None and paths.store_record.is_file()
    other = RunPaths.create("other")
    other.make()
    again = prepare_data(tiny_config, other)  # same data and settings: the same store
    assert again.store == fresh.store
    corpus = Path(tiny_config.data.source)
    corpus.rename(corpus.with_suffix(".moved"))  # a resume needs only the store
    resumed = prepare_data(tiny_config, paths)
    for data in (again, resumed):
        assert data.train.src_ids == fresh.train.src_ids
        assert data.train.tgt_ids == fresh.train.tgt_ids
        assert data.valid.tgt_ids == fresh.valid.tgt_ids
        assert data.valid_pairs == fresh.valid_pairs
        assert data.stats == fresh.stats
    assert (paths.tokenizer("src")).read_text() == (fresh.store / "tokenizer_src.json").read_text()


def test_changed_corpus_is_reported(tiny_config: Config) -> None:
    paths = RunPaths.create("r")
    paths.make()
    prepare_data(tiny_config, paths)
    split = json.loads(paths.split.read_text())
    corpus = Path(tiny_config.data.source)
    with corpus.open("a") as f:
        f.write(json.dumps({"id": "x", "translation": {"en": "new one", "it": "nuovo uno"}}) + "\n")
    with pytest.raises(DataError, match="the data changed"):
        prepare_data(tiny_config, paths)
    assert json.loads(paths.split.read_text()) == split  # the recorded split is kept


def test_split_is_recorded_and_disjoint(tiny_config: Config) -> None:
    paths = RunPaths.create("r")
    paths.make()
    data = prepare_data(tiny_config, paths)
    record = json.loads(paths.split.read_text())
    assert len(record["valid"]) == tiny_config.data.valid_size
    train_text = {
        (" ".join(map(str, s)), " ".join(map(str, t)))
        for s, t in zip(data.train.src_ids, data.train.tgt_ids, strict=True)
    }
    valid_text = {
        (" ".join(map(str, s)), " ".join(map(str, t)))
        for s, t in zip(data.valid.src_ids, data.valid.tgt_ids, strict=True)
    }
    assert not train_text & valid_text  # deduplicated before the split: no leakage


# --------------------------------------------------------------------------- no leakage


def _corpus_with_unique_words(path: Path, n: int = 300) -> list[str]:
    """Toy pairs, each with its own invented word on both sides (repeated, so that a subword
    vocabulary trained with it would make it one piece)."""
    pairs, words = [], []
    rng = random.Random(5)
    for en, it in make_pairs(n, seed=3):
        word = "zq" + "".join(rng.choice("bcdfghjklmnprstvw") for _ in range(6))
        words.append(word)
        pairs.append((f"{en} {word} {word} {word}", f"{it} {word} {word} {word}"))
    write_jsonl(path, pairs)
    return words


@pytest.mark.parametrize(("kind", "shared"), [("word", False), ("bpe", True), ("unigram", False)])
def test_tokenizers_learn_nothing_from_the_validation_split(
    tiny_config: Config, tmp_path: Path, kind: str, shared: bool
) -> None:
    """A word that occurs only in validation pairs is [UNK] (word) or several pieces
    (subwords); the same kind of word in training pairs is one token: the check can fail."""
    _corpus_with_unique_words(tmp_path / "leak.jsonl")
    config = dataclasses.replace(
        tiny_config,
        data=dataclasses.replace(
            tiny_config.data, source=str(tmp_path / "leak.jsonl"), valid_size=60, max_len=62
        ),
        tokenizer=dataclasses.replace(
            tiny_config.tokenizer,
            kind=kind,
            shared=shared,
            vocab_size=None if kind == "word" else 3000,
        ),
    )
    paths = RunPaths.create(f"leak_{kind}")
    paths.make()
    data = prepare_data(config, paths)
    valid_words = {w for _, it in data.valid_pairs for w in it.split() if w.startswith("zq")}
    train_words = {
        w
        for s in data.train.tgt_ids
        for w in data.tgt_tokenizer.decode(s).split()
        if w.startswith("zq")
    }
    assert len(valid_words) >= 30 and len(train_words) >= 150 and not valid_words & train_words
    for tok in (data.src_tokenizer, data.tgt_tokenizer):
        pieces = {w: tok.encode(w).ids for w in valid_words | train_words}
        if kind == "word":
            assert all(pieces[w] == [UNK_ID] for w in valid_words)
            assert all(UNK_ID not in pieces[w] for w in train_words)
        else:
            assert all(len(pieces[w]) > 1 and UNK_ID not in pieces[w] for w in valid_words)
            # words seen in training are cut into fewer pieces: the check can tell
            mean = {
                k: sum(len(pieces[w]) for w in ws) / len(ws)
                for k, ws in (("valid", valid_words), ("train", train_words))
            }
            assert mean["train"] < mean["valid"] - 0.5, mean


def test_a_shared_vocabulary_is_one_tokenizer_and_one_embedding_matrix(
    tiny_config: Config,
) -> None:
    config = dataclasses.replace(
        tiny_config,
        tokenizer=dataclasses.replace(
            tiny_config.tokenizer, kind="bpe", shared=True, vocab_size=400
        ),
    )
    paths = RunPaths.create("shared")
    paths.make()
    data = prepare_data(config, paths)
    assert paths.tokenizer("src").read_text() == paths.tokenizer("tgt").read_text()
    assert "gatto" in data.src_tokenizer.decode(data.src_tokenizer.encode("gatto").ids)
    vocab = data.src_tokenizer.get_vocab_size()
    model = build_model(config.model, vocab, vocab, shared_vocab=True)
    weight = model.src_embed.tokens.weight
    assert model.tgt_embed.tokens.weight is weight and model.output.weight is weight
    # A checkpoint round trip keeps the three tied.
    again = build_model(config.model, vocab, vocab, shared_vocab=True)
    again.load_state_dict(model.state_dict())
    assert again.output.weight is again.src_embed.tokens.weight
    torch.testing.assert_close(again.output.weight, weight)


def test_a_new_store_holds_what_the_earlier_version_encoded(tmp_path: Path) -> None:
    """The fixture run's encoded.npz was written before the store existed (tests/fixtures): from
    the same corpus and config, a store prepared afresh holds the same split, tokenizers and ids,
    so training on it takes the same steps as before."""
    old = FIXTURES / "run_before_layout"
    shutil.copy(old / "corpus.jsonl", "corpus.jsonl")  # the config names it relative to the cwd
    config = load_config(old / "weights" / "old" / "config.yaml", [f"data.store_dir={tmp_path}"])
    data = load_prepared(prepare_store(config))
    with np.load(old / "weights" / "old" / "encoded.npz") as z:
        for split, ds in (("train", data.train), ("valid", data.valid)):
            for side, seqs in (("src", ds.src_ids), ("tgt", ds.tgt_ids)):
                assert np.array_equal(z[f"{split}_{side}_ids"], np.asarray(seqs.ids, np.int32))
                assert np.array_equal(z[f"{split}_{side}_len"], seqs.lengths().astype(np.int32))
        assert z["valid_text"].tolist() == [text for pair in data.valid_pairs for text in pair]
    run = old / "weights" / "old"
    for side, tok in (("src", data.src_tokenizer), ("tgt", data.tgt_tokenizer)):
        assert tok.to_str() == load_tokenizer(run / f"tokenizer_{side}.json").to_str()
    split = json.loads((run / "split.json").read_text())["valid"]
    assert open_store(data.store).valid_positions() == split


def test_a_run_keeps_and_decodes_with_plain_tokenizers(tmp_path: Path) -> None:
    sets = ["tokenizer.kind=bpe", "tokenizer.vocab_size=320", "tokenizer.dropout=0.3"]
    weights = train_tiny(tmp_path, 20, *sets, "tokenizer.dropout_copies=2")
    for side in ("src", "tgt"):
        path = weights / f"tokenizer_{side}.json"
        assert json.loads(path.read_text())["model"]["dropout"] is None
        tok = load_tokenizer(path)
        sentence = "the big red house and seven cats ."
        assert len({tuple(tok.encode(sentence).ids) for _ in range(30)}) == 1
