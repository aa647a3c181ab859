"""The prepared store: the ids it holds are the tokenizers' own, the pool of workers changes
nothing, it is never left half-written (a full disk, Ctrl-C, SIGTERM), and the next run goes on;
with BPE-dropout (`tokenizer.dropout`) it holds each training pair once per segmentation, and its
key is unchanged without it."""

from __future__ import annotations

import dataclasses
import errno
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, make_pairs, write_jsonl

import translator.data.build as build
from translator.config import Config, load_config
from translator.data.build import prepare_store
from translator.data.prepare import data_summary, load_prepared
from translator.data.store import StoreWriter, config_ident
from translator.errors import ConfigError, DataError


def stores(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def changed(config: Config, section: str, **values: object) -> Config:
    """`config` with some keys of one section changed."""
    return dataclasses.replace(
        config, **{section: dataclasses.replace(getattr(config, section), **values)}
    )


@pytest.mark.parametrize("kind", ["word", "bpe"])
def test_store_holds_the_ids_the_tokenizers_give(tiny_config: Config, kind: str) -> None:
    config = changed(tiny_config, "tokenizer", kind=kind, vocab_size=400 if kind == "bpe" else None)
    data = load_prepared(prepare_store(config))
    src_tok, tgt_tok = data.src_tokenizer, data.tgt_tokenizer
    assert len(data.valid) == len(data.valid_pairs) == config.data.valid_size
    for i, (src, tgt) in enumerate(data.valid_pairs):
        assert data.valid.src_ids[i] == src_tok.encode(src).ids
        assert data.valid.tgt_ids[i] == tgt_tok.encode(tgt).ids
    train_text = {
        (src_tok.decode(s), tgt_tok.decode(t))
        for s, t in zip(data.train.src_ids, data.train.tgt_ids, strict=True)
    }
    assert len(train_text) == len(data.train)  # deduplicated
    assert not train_text & set(data.valid_pairs)  # and split after deduplication
    assert data.train.src_ids.ids.dtype == np.uint16  # a small vocabulary takes 2 bytes an id


def test_workers_and_chunks_change_nothing(
    tiny_config: Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The pool path (several chunks, two processes) writes the same store as one process."""
    inline = load_prepared(prepare_store(changed(tiny_config, "data", workers=1)))
    monkeypatch.setattr(build, "CHUNK", 37)
    pooled_config = changed(tiny_config, "data", workers=2, store_dir=str(tmp_path / "s2"))
    pooled = load_prepared(prepare_store(pooled_config))
    assert pooled.store != inline.store
    assert pooled.train.src_ids == inline.train.src_ids
    assert pooled.train.tgt_ids == inline.train.tgt_ids
    assert pooled.valid_pairs == inline.valid_pairs
    assert pooled.stats == inline.stats


def test_a_full_disk_is_one_line_and_keeps_nothing(
    tiny_config: Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = changed(tiny_config, "data", store_dir=str(tmp_path / "stores"))
    write = StoreWriter._write

    class FullDisk:
        def write(self, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            pass

    def full(self: StoreWriter, name: str, array: np.ndarray) -> None:
        if name.endswith(".ids"):
            self.files.setdefault(name, FullDisk())  # type: ignore[arg-type]
        write(self, name, array)

    monkeypatch.setattr(StoreWriter, "_write", full)
    with pytest.raises(DataError, match="no room on disk for the prepared store") as err:
        prepare_store(config)
    assert "\n" not in str(err.value)
    assert stores(tmp_path / "stores") == []  # nothing half-written, no temporary folder


def big_corpus(path: Path, n: int) -> Path:
    """`n` toy pairs (many repeated: read with data.dedup false), enough that preparing takes a
    few seconds."""
    return write_jsonl(path, make_pairs(n, seed=9))


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_prepare_stops_at_once_and_the_next_one_succeeds(
    tmp_path: Path, sig: signal.Signals
) -> None:
    corpus = big_corpus(tmp_path / "big.jsonl", 150_000)
    store_dir = tmp_path / "stores"
    tiny = str(ROOT / "configs" / "tiny.yaml")
    args = [sys.executable, "-m", "translator", "prepare", "--config", tiny,
            "--set", f"data.source={corpus}", "--set", f"data.store_dir={store_dir}",
            "--set", "data.workers=2", "--set", "data.dedup=false"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # Ctrl-C as in a terminal: a test runner started in the background of a script (nohup, `&`)
    # passes on SIGINT ignored, and Python then leaves it ignored, as it should
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_sigint)  # fmt: skip
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".tmp-") for p in store_dir.glob("*")):  # preparing now
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 5, "took too long to stop"
    assert proc.returncode == 130, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: interrupted while preparing the data; nothing was kept"), last
    assert stores(store_dir) == []
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "150,000 pairs read" in done.stdout
    assert len(stores(store_dir)) == 1


def test_prepare_then_train_uses_the_same_store(tmp_path: Path, tiny_config: Config) -> None:
    """`translator prepare` makes the store that `train` then finds, and the run records it."""
    from helpers import cli

    sets = ["--set", f"data.source={tiny_config.data.source}"]
    config = str(ROOT / "configs" / "tiny.yaml")
    prepared = cli(tmp_path, "prepare", "--config", config, *sets)
    assert prepared.returncode == 0, prepared.stderr
    store = prepared.stdout.splitlines()[-1].split()[1]
    trained = cli(tmp_path, "train", "--config", config, "--run", "p", *sets,
                  "--set", "train.max_steps=2", "--set", "train.eval_every=0")  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    assert f"prepared data: {store} (ready)" in trained.stderr
    assert store in (tmp_path / "weights" / "p" / "store.json").read_text()
    assert load_config(tmp_path / "weights" / "p" / "config.yaml").data.source


def bpe_config(tiny_config: Config, **tokenizer: object) -> Config:
    values = {"kind": "bpe", "vocab_size": 320, **tokenizer}
    return dataclasses.replace(
        tiny_config, tokenizer=dataclasses.replace(tiny_config.tokenizer, **values)
    )


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
