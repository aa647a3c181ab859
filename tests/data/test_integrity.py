"""A prepared store proves itself whole when opened: a byte changed in any file, a file cut
short or gone, a meta.json edited by hand, an id past the vocabulary are each caught, named, and
never trained on; a run prepares the data again, or says in one line what to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, cli, make_pairs, write_jsonl

from translator.config import Config, load_config
from translator.data.build import prepare_store
from translator.data.integrity import StoreDamaged, meta_digest
from translator.data.store import open_store


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of two sources (so it records each pair's source), every file written."""
    a = write_jsonl(tmp_path / "a.jsonl", make_pairs(300))
    b = write_jsonl(tmp_path / "b.jsonl", make_pairs(200, seed=4))
    config = load_config(ROOT / "configs" / "tiny.yaml", [f"data.source=[{a}, {b}]"])
    return prepare_store(config).path


def store_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def test_the_store_holds_every_split_and_side_and_the_sources(store: Path) -> None:
    names = store_files(store)
    for split in ("train", "valid"):
        for side in ("src", "tgt"):
            assert {f"{split}.{side}.{x}" for x in ("ids", "off", "len")} <= set(names)
    assert "train.source" in names and "clean.tsv" not in names
    assert open_store(store) is not None


@pytest.mark.parametrize("how", ["flip", "cut"])
def test_one_byte_changed_or_cut_in_any_file_is_caught(
    store: Path, tmp_path: Path, how: str
) -> None:
    key = json.loads((store / "meta.json").read_text())["key"]
    for name in store_files(store):
        copy = tmp_path / "copies" / name
        shutil.copytree(store, copy)
        data = bytearray((copy / name).read_bytes())
        middle = len(data) // 2
        if how == "flip":
            data[middle] ^= 0x01
        else:
            del data[-1:]
        (copy / name).write_bytes(bytes(data))
        with pytest.raises(StoreDamaged, match=name.replace(".", r"\.")):
            open_store(copy, key)


def test_a_missing_file_is_caught(store: Path) -> None:
    (store / "valid.tgt.off").unlink()
    with pytest.raises(StoreDamaged, match=r"valid\.tgt\.off is missing"):
        open_store(store)


def test_an_id_past_the_vocabulary_never_passes(store: Path) -> None:
    """Even with a meta.json rewritten consistently (its own digest made anew)."""
    meta = json.loads((store / "meta.json").read_text())
    meta["max_id"]["train.src.ids"] = meta["vocab_size"]
    meta["meta_sha256"] = meta_digest(meta)
    (store / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(StoreDamaged, match=r"train\.src\.ids holds id \d+, past the vocabulary"):
        open_store(store)


def test_the_recorded_largest_id_is_the_largest_id(store: Path) -> None:
    import numpy as np

    meta = json.loads((store / "meta.json").read_text())
    for name, largest in meta["max_id"].items():
        assert int(np.fromfile(store / name, dtype=meta["dtype"]).max()) == largest


def test_train_on_a_damaged_store_prepares_again_and_resume_says_so(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "c.jsonl", make_pairs(300))
    tiny = str(ROOT / "configs" / "tiny.yaml")
    args = ["--config", tiny, "--set", "data.source=c.jsonl", "--set", "train.eval_every=0"]
    done = cli(tmp_path, "prepare", *args)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.split("store: ")[1].split(" (")[0])
    ids = path / "train.tgt.ids"
    ids.write_bytes(b"\xff\xff" + ids.read_bytes()[2:])  # an id far past the vocabulary
    done = cli(tmp_path, "train", *args, "--set", "train.max_steps=2", "--run", "r")
    assert done.returncode == 0, done.stderr
    assert (
        f"the prepared store {path} is damaged (train.tgt.ids: its content differs from what "
        "was written): preparing the data again into a fresh folder"
    ) in done.stderr
    assert open_store(path) is not None  # a fresh store in its place
    # the run's own store damaged, its corpus gone: one line, naming the store and what to do
    recorded = Path(json.loads((tmp_path / "weights/r/store.json").read_text())["path"])
    with (recorded / "valid.src.len").open("ab") as f:
        f.write(b"\0")
    (tmp_path / "c.jsonl").unlink()
    done = cli(tmp_path, "train", "--run", "r", "--resume", "--set", "train.max_steps=4")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: the prepared store {recorded} is damaged (valid.src.len")
    assert "restore data.source, or copy the store again" in lines[0]


def test_every_store_the_suite_writes_is_verified(tiny_config: Config) -> None:
    """conftest verifies each store right after it is written; this shows the hook is on."""
    from translator.data.store import StoreWriter

    assert getattr(StoreWriter.commit, "verified_by_the_suite", False)
    assert prepare_store(tiny_config) is not None


def test_a_store_of_an_older_format_in_the_place_is_replaced(tiny_config: Config) -> None:
    """A store folder written by an earlier version sits where the new one goes: it is set
    aside, not an error (every user upgrading has one)."""
    path = prepare_store(tiny_config).path
    meta = json.loads((path / "meta.json").read_text())
    meta["version"] = 1
    (path / "meta.json").write_text(json.dumps(meta))
    assert open_store(path) is None  # not ours to read
    again = prepare_store(tiny_config)
    assert again.path == path and open_store(path) is not None
