"""The prepared store: a corpus's token ids on disk, memory-mapped when read, shared by runs.

One folder per content key (sources, their sizes and mtimes, the data and tokenizer settings, the
seed) under `data.store_dir`:

    meta.json                  format, key, what it was made from, counts, filter counts
    tokenizer_{src,tgt}.json   the tokenizers, trained on the training split
    {train,valid}.{src,tgt}.ids  token ids, flat (uint16 when the vocabulary fits, else uint32)
    {train,valid}.{src,tgt}.off  int64 offsets, one more than there are pairs
    {train,valid}.{src,tgt}.len  lengths (uint16), for bucketing without reading the ids
    train.copy                 which encoding of its text each pair is (uint8), only with
                               BPE-dropout (meta.json's `copies` says how many)
    train.source               which entry of data.source each pair came from (uint8), only
                               with several entries (for their weights)
    valid.tsv                  the validation pairs' text, source<TAB>target a line
    split.npy                  positions of the validation pairs among the cleaned pairs

A store is written in a temporary folder beside its place and renamed into it when complete, so
a half-written store is never used; meta.json is written last. It records the size and SHA-256
of every other file, the largest id in each id file and the vocabulary size, and a SHA-256 of
itself; every open checks them all (integrity.py), so a store damaged after it was written (a
disk error, a partial copy, a hand edit) is never trained on.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Any

import numpy as np
from tokenizers import Tokenizer

from translator.config import Config
from translator.data.batching import BilingualDataset, Sequences
from translator.data.casing import CASING_FILE
from translator.data.clean import FilterStats
from translator.data.hub import writable_dir
from translator.data.integrity import (
    StoreDamaged,
    discard_damaged,
    file_digest,
    meta_digest,
    verify_files,
)
from translator.data.read import Pair, resolve_sources
from translator.data.spelling import SPELLING_FILE
from translator.data.tokenizer import fingerprint, load_tokenizer, save_tokenizer
from translator.data.typed import FORMS_VERSION
from translator.durable import process_alive, publish_dir
from translator.errors import DataError
from translator.jsonfile import save_word_table
from translator.run.names import tokenizer_file

WORD_TABLES = (CASING_FILE, SPELLING_FILE)
"""Tables of words learnt from the data, kept beside its tokenizers (and copied into its runs)."""
TABLES_VERSION = 2
"""Part of every store's key: 2, a store holds spelling.json too (so stores made before are
prepared again, and stores made before casing.json are no longer reused without it)."""
FORMAT, VERSION = "translator-store", 2  # 2: checksums, entries of data.source
SPLITS, SIDES = ("train", "valid"), ("src", "tgt")
LENGTH_DTYPE = np.uint16  # data.max_len is far below 65,535
COPY_DTYPE = np.uint8  # tokenizer.dropout_copies is at most 255
SOURCE_DTYPE = np.uint8  # data.source has at most 255 entries


@dataclass
class Store:
    """An opened store: its datasets are memory-mapped, nothing is read until used."""

    path: Path
    meta: dict[str, Any]

    def dataset(self, split: str) -> BilingualDataset:
        copies = None
        if self.meta.get("copies", {}).get(split):
            n = self.meta["counts"][split]
            copies = _map(self.path / f"{split}.copy", np.dtype(COPY_DTYPE), n)
        return BilingualDataset(*(self._sequences(split, side) for side in SIDES), copies=copies)

    def entries(self, split: str) -> np.ndarray | None:
        """The entry of data.source of each pair of `split`; None when there was one entry."""
        if not self.meta.get("entries", {}).get(split):
            return None
        return _map(
            self.path / f"{split}.source", np.dtype(SOURCE_DTYPE), self.meta["counts"][split]
        )

    def _sequences(self, split: str, side: str) -> Sequences:
        n = self.meta["counts"][split]
        ids = _map(self.path / f"{split}.{side}.ids", np.dtype(self.meta["dtype"]))
        offsets = _map(self.path / f"{split}.{side}.off", np.dtype(np.int64), n + 1)
        lengths = _map(self.path / f"{split}.{side}.len", np.dtype(LENGTH_DTYPE), n)
        return Sequences(ids, offsets, lengths)

    def tokenizers(self) -> tuple[Tokenizer, Tokenizer]:
        return tuple(load_tokenizer(tokenizer_file(self.path, s)) for s in SIDES)  # type: ignore[return-value]

    def valid_pairs(self) -> list[Pair]:
        lines = (self.path / "valid.tsv").read_text(encoding="utf-8").splitlines()
        return [tuple(line.split("\t", 1)) for line in lines]  # type: ignore[misc]

    def valid_positions(self) -> list[int]:
        return np.load(self.path / "split.npy").tolist()

    def stats(self) -> FilterStats:
        record = dict(self.meta["stats"])
        record["per_source"] = [tuple(x) for x in record.get("per_source", [])]
        return FilterStats(**record)


@dataclass(frozen=True)
class Given:
    """What a run already has and its store must keep: its tokenizers and its split."""

    tokenizers: tuple[Tokenizer, Tokenizer] | None = None
    valid: list[int] | None = None
    """Positions of the validation pairs among the cleaned pairs."""
    n_pairs: int | None = None

    def fingerprint(self) -> dict[str, Any]:
        split = hashlib.sha256(json.dumps(self.valid).encode()).hexdigest() if self.valid else None
        toks = [fingerprint(t) for t in self.tokenizers] if self.tokenizers else None
        return {"tokenizers": toks, "split": split, "n_pairs": self.n_pairs}


def config_ident(config: Config) -> dict[str, Any]:
    """What the prepared data depends on: the sources' files (path, size, mtime), the data and
    tokenizer settings, the seed. Not where files are cached or how many processes work."""
    skip = {"source", "cache_dir", "store_dir", "workers"}
    data = {k: v for k, v in dataclasses.asdict(config.data).items() if k not in skip}
    if not data["join_pairs"]:  # the keys of stores made before joined pairs existed
        del data["join_pairs"]
    if not data["noise"]:  # ... and before data.noise
        del data["noise"], data["typo_words"]
    else:  # what each form does is part of the data: a change to it prepares the data again
        data["noise_forms"] = FORMS_VERSION
    tokenizer = dataclasses.asdict(config.tokenizer)
    if not tokenizer["dropout"]:  # the keys of stores made before BPE-dropout existed
        del tokenizer["dropout"], tokenizer["dropout_copies"]
    return {
        "sources": [s.fingerprint() for s in resolve_sources(config.data)],
        "data": data,
        "tokenizer": tokenizer,
        "seed": config.train.seed,
        "tables": TABLES_VERSION,
    }


def store_key(ident: dict[str, Any], given: Given) -> str:
    blob = json.dumps({"config": ident, "given": given.fingerprint()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def store_root(config: Config) -> Path:
    """`data.store_dir`, or ~/.cache/translator/stores (a temporary folder if that fails)."""
    if config.data.store_dir:
        return writable_dir([config.data.store_dir], "data.store_dir")
    home = Path.home() / ".cache" / "translator" / "stores"
    return writable_dir([home, Path("/tmp/translator-stores")], "data.store_dir")


def _map(path: Path, dtype: np.dtype, count: int | None = None) -> np.ndarray:
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    arr = np.memmap(path, dtype=dtype, mode="r")
    if count is not None and len(arr) != count:
        raise DataError(f"{path}: {len(arr):,} entries where {count:,} were recorded")
    return arr


def open_store(path: Path, key: str | None = None, verify: bool = True) -> Store | None:
    """The complete store at `path` (with `key`, when given), or None when there is none.

    With `verify`, a store whose files differ from what its meta.json records raises
    StoreDamaged: it must not be used.
    """
    try:
        text = (path / "meta.json").read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        meta = json.loads(text)
    except ValueError:  # written last and renamed into place whole: not a half-written one
        if verify:
            raise StoreDamaged(path, "meta.json is not valid JSON") from None
        return None
    if not isinstance(meta, dict):
        raise StoreDamaged(path, "meta.json is not a record")
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        return None
    if key is not None and meta.get("key") != key:
        return None
    store = Store(path, meta)
    if verify:
        verify_files(path, meta)
    return store


class StoreWriter:
    """Writes a store into `.tmp-<name>-<pid>` beside `final`; `commit` renames it into place.

    Leaving the `with` block without a commit (an error, Ctrl-C) removes the temporary folder;
    one left by a killed process is removed by the next writer of the same store.
    """

    def __init__(self, final: Path, vocab_size: int | None = None) -> None:
        self.final = final
        self.tmp = final.with_name(f".tmp-{final.name}-{os.getpid()}")
        self.files: dict[str, IO[bytes]] = {}
        self.totals: dict[str, int] = {}
        self.counts = dict.fromkeys(SPLITS, 0)
        self.copies: dict[str, int] = {}
        """Splits that hold several encodings of each pair: how many."""
        self.entries: dict[str, bool] = {}
        """Splits that record each pair's entry of data.source ({split}.source)."""
        self.max_id: dict[str, int] = {}
        """The largest id written to each id file."""
        self.dtype = np.dtype(np.uint16)
        if vocab_size is not None:
            self.set_vocab_size(vocab_size)

    def __enter__(self) -> StoreWriter:
        self.stale = remove_stale_temps(self.final)
        try:
            self.tmp.mkdir(parents=True)
        except OSError as exc:
            raise _disk_error(exc, self.final) from None
        return self

    def __exit__(self, *exc: object) -> None:
        for f in self.files.values():
            f.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def set_vocab_size(self, size: int) -> None:
        self.dtype = np.dtype(np.uint16 if size <= 2**16 else np.uint32)

    def append(
        self,
        split: str,
        src: Sequence[Sequence[int]],
        tgt: Sequence[Sequence[int]],
        copy: int | None = None,
        entry: np.ndarray | None = None,
    ) -> None:
        """Add pairs (their ids, specials excluded) to the end of `split`; `copy`: which of
        several encodings of their text they are (BPE-dropout), the same for every append of a
        split that has copies; `entry`: the entry of data.source each pair came from, given for
        every append of a split or for none."""
        assert len(src) == len(tgt)
        if entry is not None:
            assert len(entry) == len(src)
            self._write(f"{split}.source", entry.astype(SOURCE_DTYPE, copy=False))
            self.entries[split] = True
        if self.counts[split] and (copy is not None) != (split in self.copies):
            raise ValueError(f"store split {split}: pairs with and without a copy number")
        if copy is not None:
            self._write(f"{split}.copy", np.full(len(src), copy, dtype=COPY_DTYPE))
            self.copies[split] = max(self.copies.get(split, 0), copy + 1)
        for side, seqs in zip(SIDES, (src, tgt), strict=True):
            lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
            total = int(lengths.sum())
            ids = np.fromiter(chain.from_iterable(seqs), dtype=self.dtype, count=total)
            name = f"{split}.{side}"
            if total:
                self.max_id[f"{name}.ids"] = max(self.max_id.get(f"{name}.ids", 0), int(ids.max()))
            start = self.totals.get(name, 0)
            if name not in self.totals:
                self._write(f"{name}.off", np.zeros(1, dtype=np.int64))
            self._write(f"{name}.ids", ids)
            self._write(f"{name}.off", start + np.cumsum(lengths))
            self._write(f"{name}.len", lengths.astype(LENGTH_DTYPE))
            self.totals[name] = start + total
        self.counts[split] += len(src)

    def _write(self, name: str, array: np.ndarray) -> None:
        try:
            if name not in self.files:
                self.files[name] = (self.tmp / name).open("wb")
            self.files[name].write(array.tobytes())
        except OSError as exc:
            raise _disk_error(exc, self.final) from None

    def commit(
        self,
        meta: dict[str, Any],
        tokenizers: tuple[Tokenizer, Tokenizer],
        valid_pairs: list[Pair],
        valid_positions: np.ndarray,
        tables: dict[str, dict[str, Any]] | None = None,
    ) -> Store:
        """Write the rest, then rename the folder into place (or use one a concurrent writer
        committed first)."""
        for split in SPLITS:
            if f"{split}.src" not in self.totals:  # nothing appended: empty files all the same
                self.append(split, [], [])
        try:
            for f in self.files.values():
                f.close()
            for side, tok in zip(SIDES, tokenizers, strict=True):
                save_tokenizer(tok, tokenizer_file(self.tmp, side))
            for name, table in (tables or {}).items():  # casing.json, spelling.json
                save_word_table(table, self.tmp / name)
            text = "".join(f"{s}\t{t}\n" for s, t in valid_pairs)
            (self.tmp / "valid.tsv").write_text(text, encoding="utf-8")
            np.save(self.tmp / "split.npy", valid_positions.astype(np.int64))
            (self.tmp / "clean.tsv").unlink(missing_ok=True)  # the prepare's scratch text
            files = {
                f.name: {"size": f.stat().st_size, "sha256": file_digest(f)}
                for f in sorted(self.tmp.iterdir())
            }
            vocab = max(t.get_vocab_size() for t in tokenizers)
            full = {"format": FORMAT, "version": VERSION, "dtype": self.dtype.name,
                    "counts": self.counts, "copies": self.copies, "entries": self.entries,
                    "files": files, "max_id": self.max_id, "vocab_size": vocab, **meta}  # fmt: skip
            full["meta_sha256"] = meta_digest(full)
            (self.tmp / "meta.json").write_text(json.dumps(full, indent=1), encoding="utf-8")
            self._rename_into_place()
        except OSError as exc:
            raise _disk_error(exc, self.final) from None
        store = open_store(self.final, verify=False)
        assert store is not None
        return store

    def _rename_into_place(self) -> None:
        """Rename the finished folder to `final`. A folder there already is a store that a
        concurrent writer committed first (then kept), or one of an older format or a damaged
        one (then set aside and replaced)."""
        if publish_dir(self.tmp, self.final):  # its files flushed to disk, then renamed
            return
        try:
            if open_store(self.final) is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)
                return
        except StoreDamaged:
            pass
        discard_damaged(StoreDamaged(self.final, "of an older format"))
        os.rename(self.tmp, self.final)


def remove_stale_temps(final: Path) -> int:
    """Remove temporary folders of `final` left by writers that no longer run; how many."""
    removed = 0
    for tmp in final.parent.glob(f".tmp-{final.name}-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and process_alive(int(pid)):
            continue
        shutil.rmtree(tmp, ignore_errors=True)
        removed += 1
    return removed


def _disk_error(exc: OSError, final: Path) -> DataError:
    if exc.errno == errno.ENOSPC:
        return DataError(
            f"no room on disk for the prepared store {final} (nothing was kept); free some "
            "space, or set data.store_dir to a disk with more"
        )
    return DataError(
        f"cannot write the prepared store {final}: {exc.strerror or exc}; set data.store_dir "
        "to a writable directory"
    )
