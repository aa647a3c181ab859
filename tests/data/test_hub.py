"""The hub path, executed offline: a local dataset repository laid out like the hub's opus_books
goes through the very `datasets.load_dataset(...)` call of `read_hub_pairs`, then trains."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from helpers import ROOT, make_pairs
from typer.testing import CliRunner

from translator.cli import app
from translator.config import DataConfig
from translator.data.hub import read_hub_pairs
from translator.data.read import read_pairs
from translator.errors import DataError

README = """---
configs:
- config_name: de-it
  data_files:
  - split: train
    path: de-it/train-*.parquet
- config_name: en-it
  data_files:
  - split: train
    path: en-it/train-*.parquet
  - split: test
    path: en-it/test-*.parquet
---
# opus_books, a local stand-in for tests
"""
OFFLINE = "the hub cannot be reached from this machine and no cached copy was found"


def write_parquet(path: Path, pairs: list[tuple[str, str]], src: str = "en") -> None:
    """One parquet file in the hub's opus_books schema: id, translation {src, it}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{src: s, "it": t} for s, t in pairs]
    pq.write_table(pa.table({"id": [str(i) for i in range(len(rows))], "translation": rows}), path)


@pytest.fixture
def hub_repo(tmp_path: Path) -> tuple[Path, list[tuple[str, str]]]:
    """A dataset repository like opus_books: en-it (train and test splits) and de-it configs.

    Returns the repository and the en-it train pairs, all distinct, in file order."""
    repo = tmp_path / "hub" / "opus_books"
    train = list(dict.fromkeys(make_pairs(260, seed=3)))[:200]
    write_parquet(repo / "en-it" / "train-00000-of-00001.parquet", train)
    write_parquet(repo / "en-it" / "test-00000-of-00001.parquet", [("test only .", "solo test .")])
    write_parquet(repo / "de-it" / "train-00000-of-00001.parquet", [("eins .", "uno .")], "de")
    (repo / "README.md").write_text(README, encoding="utf-8")
    return repo, train


def test_translation_column_of_the_train_split_becomes_pairs_and_offline_is_one_message(
    hub_repo: tuple[Path, list[tuple[str, str]]], tmp_path: Path
) -> None:
    repo, train = hub_repo
    cache = str(tmp_path / "datasets-cache")
    # The repository id swapped for the local path: the en-it config, its train split, in order.
    pairs = read_hub_pairs(DataConfig(source=str(repo), cache_dir=cache))
    assert pairs == train
    assert ("test only .", "solo test .") not in pairs
    assert read_hub_pairs(DataConfig(source=str(repo), lang_src="de", cache_dir=cache)) == [
        ("eins .", "uno .")
    ]
    assert any(Path(cache).iterdir())  # it went through the datasets cache given in the config
    # The real id with no network (conftest sets HF_*_OFFLINE) and an empty cache: one message.
    with pytest.raises(DataError) as failed:
        read_pairs(DataConfig(source="opus_books", cache_dir=str(tmp_path / "empty-cache")))
    message = str(failed.value)
    assert "'opus_books' (en-it)" in message and OFFLINE in message
    assert "--set data.source=path/to/pairs.jsonl" in message and "\n" not in message


def test_cli_trains_two_steps_on_the_hub_layout(
    hub_repo: tuple[Path, list[tuple[str, str]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    repo, train = hub_repo
    real_load = datasets.load_dataset
    calls: list[tuple] = []

    def local_hub(path: str, *args, **kwargs):
        calls.append((path, *args, kwargs.get("split")))
        return real_load(str(repo) if path == "opus_books" else path, *args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", local_hub)
    cache = tmp_path / "datasets-cache"
    done = CliRunner().invoke(
        app,
        [
            "train", "--config", str(ROOT / "configs" / "tiny.yaml"), "--run", "hub",
            "--device", "cpu",
            "--set", "data.source=opus_books",
            "--set", f"data.cache_dir={cache}",
            "--set", "train.max_steps=2",
        ],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert calls == [("opus_books", "en-it", "train")]
    split = json.loads(Path("weights/hub/split.json").read_text())
    assert split["n_pairs"] == len(train) and len(split["valid"]) == 50  # tiny.yaml's valid_size
    state = torch.load("weights/hub/latest.pt", weights_only=True)
    assert state["progress"]["step"] == 2
    assert state["config"]["data"]["source"] == "opus_books"
