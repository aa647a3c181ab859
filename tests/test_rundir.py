"""The run directory: recorded split, reused tokenizers, and the encoded-data cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from translator.config import Config
from translator.errors import DataError
from translator.rundir import RunPaths, _cache_key, load_encoded, prepare_data


def test_cache_reproduces_the_prepared_data(tiny_config: Config) -> None:
    paths = RunPaths.create("r")
    paths.make()
    fresh = prepare_data(tiny_config, paths)
    assert paths.encoded.is_file()
    cached = load_encoded(paths, _cache_key(tiny_config))
    assert cached is not None
    assert cached.train.src_ids == fresh.train.src_ids
    assert cached.train.tgt_ids == fresh.train.tgt_ids
    assert cached.valid.tgt_ids == fresh.valid.tgt_ids
    assert cached.valid_pairs == fresh.valid_pairs
    assert cached.stats == fresh.stats


def test_changed_corpus_invalidates_cache_and_is_reported(tiny_config: Config) -> None:
    paths = RunPaths.create("r")
    paths.make()
    prepare_data(tiny_config, paths)
    split = json.loads(paths.split.read_text())
    corpus = Path(tiny_config.data.source)
    with corpus.open("a") as f:
        f.write(json.dumps({"id": "x", "translation": {"en": "new one", "it": "nuovo uno"}}) + "\n")
    assert load_encoded(paths, _cache_key(tiny_config)) is None
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
