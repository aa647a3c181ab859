"""Every bad input to `translator import` is one line naming what is wrong, a non-zero exit, and
nothing under weights/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import cli


def copy(marian: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(marian, tmp_path / "model"))


def refused(tmp_path: Path, *args: str, match: str) -> None:
    done = cli(tmp_path, "import", *args, "--run", "x")
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert match in lines[0], lines[0]
    assert not (tmp_path / "weights" / "x").exists()
    leftovers = list((tmp_path / "weights").iterdir()) if (tmp_path / "weights").exists() else []
    assert leftovers == []


def test_another_architecture(marian_shared: Path, tmp_path: Path) -> None:
    model = copy(marian_shared, tmp_path)
    config = json.loads((model / "config.json").read_text())
    config.update(model_type="t5", architectures=["T5ForConditionalGeneration"])
    (model / "config.json").write_text(json.dumps(config))
    refused(tmp_path, str(model), match="holds a T5 model (T5ForConditionalGeneration)")


@pytest.mark.parametrize("name", ["source.spm", "target.spm", "vocab.json"])
def test_a_missing_file(marian_shared: Path, tmp_path: Path, name: str) -> None:
    model = copy(marian_shared, tmp_path)
    (model / name).unlink()
    refused(tmp_path, str(model), match=f"{name} is missing")


def test_a_truncated_weight_file(marian_shared: Path, tmp_path: Path) -> None:
    model = copy(marian_shared, tmp_path)
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    refused(tmp_path, str(model), match="model.safetensors")


def test_a_hub_name_without_network(tmp_path: Path) -> None:
    refused(tmp_path, "Helsinki-NLP/opus-mt-en-it", match="no network")


def test_no_such_directory(tmp_path: Path) -> None:
    refused(tmp_path, "nowhere/at/all", match="no such directory")


def test_a_multilingual_model_needs_its_target_language(tmp_path: Path) -> None:
    from marian_models import make_marian

    model = make_marian(tmp_path / "multi", language_codes=(">>fra<<", ">>ita<<"), pairs=500)
    refused(tmp_path, str(model), match="--target-language ita")
    done = cli(tmp_path, "import", str(model), "--run", "x", "--target-language", "ita")
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "translate", "--run", "x", "--set", "decode.beam=1", "Hello.")
    assert done.returncode == 0, done.stderr
    from translator.data.tokenizer import load_tokenizer

    tok = load_tokenizer(tmp_path / "weights" / "x" / "tokenizer_src.json")
    assert tok.encode("Hello.").ids[0] == tok.token_to_id(">>ita<<")


def test_an_existing_run_is_not_overwritten(marian_shared: Path, tmp_path: Path) -> None:
    (tmp_path / "weights" / "x").mkdir(parents=True)
    (tmp_path / "weights" / "x" / "keep").write_text("mine")
    done = cli(tmp_path, "import", str(marian_shared), "--run", "x")
    assert done.returncode != 0 and "already exists" in done.stderr
    assert (tmp_path / "weights" / "x" / "keep").read_text() == "mine"


@pytest.mark.parametrize("resume", [True, False])
def test_an_imported_run_is_trained_from_not_continued(
    marian_shared: Path, tmp_path: Path, resume: bool
) -> None:
    """train --run on an imported run (with or without --resume) says to use --init-from, and
    leaves the run's files as they were."""
    from helpers import make_pairs, write_jsonl

    assert cli(tmp_path, "import", str(marian_shared), "--run", "x").returncode == 0
    run = tmp_path / "weights" / "x"
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}
    data = write_jsonl(tmp_path / "pairs.jsonl", make_pairs(100))
    args = ["train", "--run", "x", "--set", f"data.source={data}"]
    done = cli(tmp_path, *args, *(["--resume"] if resume else []))
    assert done.returncode != 0
    assert "--init-from x --run NEW_NAME" in done.stderr.strip().splitlines()[-1]
    after = {p.name: p.stat().st_mtime_ns for p in run.iterdir() if p.name != "train.lock"}
    assert after == before
