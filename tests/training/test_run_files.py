"""A run directory holds only that run's files: a resume from an earlier checkpoint sets the
abandoned branch aside (what `translate` picks is of the resumed one), a run name reused after
an attempt killed before its first checkpoint keeps nothing of it, and bad data on these paths
is one line naming the corpora or the entry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, make_pairs, write_jsonl

from translator.errors import DataError
from translator.run.checkpoint import load_checkpoint
from translator.run.paths import checkpoint_of_run
from translator.training.train import train_command

TINY = ROOT / "configs" / "tiny.yaml"
QUIET = ["train.eval_every=0", "train.batch_tokens=256", "train.epochs=50"]


def train(name: str, source: Path | str, *extra: str, resume: str | None = None) -> None:
    train_command(TINY, [f"data.source={source}", *QUIET, *extra], name, resume, "cpu")


def test_resume_from_an_earlier_checkpoint_sets_the_later_branch_aside(tmp_path: Path) -> None:
    """To step 10, a copy kept; on to 20; resumed from the copy to 15: the average and what
    `translate` picks are of steps up to 15, none of the abandoned steps 16-20."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", make_pairs(600))
    every = ["train.checkpoint_every=5", "train.average_last=2"]
    train("q", corpus, *every, "train.max_steps=10")
    run = tmp_path / "weights" / "q"
    shutil.copyfile(run / "latest.pt", tmp_path / "step10.pt")
    train("q", corpus, *every, "train.max_steps=20", resume="latest")
    train("q", corpus, *every, "train.max_steps=15", resume=str(tmp_path / "step10.pt"))

    chosen = load_checkpoint(checkpoint_of_run(run))
    assert chosen["progress"]["step"] == 15
    assert all("20" not in name for name in chosen.get("averaged_from", []))
    for path in run.glob("*.pt"):
        assert load_checkpoint(path)["progress"]["step"] <= 15, path.name
    aside = run / "abandoned-after-step-10"
    assert {p.name for p in aside.iterdir()} >= {"step_00000020.pt", "averaged.pt", "latest.pt"}


def test_a_run_name_reused_after_a_kill_keeps_nothing_of_the_first_attempt(
    tmp_path: Path,
) -> None:
    """An attempt on corpus A killed before its first checkpoint left its tables and a
    teacher.json; run X trained again on corpus B has B's tables and no teacher."""
    first = write_jsonl(tmp_path / "a.jsonl", make_pairs(600))
    train("a", first, "train.max_steps=1")
    killed = tmp_path / "weights" / "x"
    killed.mkdir(parents=True)
    for name in ("casing.json", "spelling.json", "split.json", "tokenizer_src.json",
                 "tokenizer_tgt.json", "store.json"):  # fmt: skip
        shutil.copyfile(tmp_path / "weights" / "a" / name, killed / name)
    teacher = {"teacher": "c", "kind": "run", "path": "/c", "checkpoint": "/c/latest.pt",
               "step": 20, "sha256": "0" * 64}  # fmt: skip
    (killed / "teacher.json").write_text(json.dumps(teacher))

    names = [(f"{en[:-2]} Tom .", f"{it[:-2]} Tom .") for en, it in make_pairs(600, seed=5)]
    train("x", write_jsonl(tmp_path / "b.jsonl", names), "train.max_steps=1")
    store = Path(json.loads((killed / "store.json").read_text())["path"])
    for name in ("casing.json", "spelling.json"):
        assert (killed / name).read_bytes() == (store / name).read_bytes(), name
    old_casing = (tmp_path / "weights" / "a" / "casing.json").read_bytes()
    assert (killed / "casing.json").read_bytes() != old_casing
    assert not (killed / "teacher.json").exists()


def test_a_resume_on_other_data_names_both_corpora(tmp_path: Path) -> None:
    first = write_jsonl(tmp_path / "first.jsonl", make_pairs(600))
    train("x", first, "train.max_steps=1")
    second = write_jsonl(tmp_path / "second.jsonl", make_pairs(600, seed=3))
    with pytest.raises(DataError) as exc:
        train("x", second, "train.max_steps=2", resume="latest")
    message = str(exc.value)
    assert "\n" not in message
    assert str(first.resolve()) in message and str(second.resolve()) in message
    assert "--run NEW_NAME" in message


def test_a_weight_too_large_for_an_epoch_is_one_line_naming_the_entry(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "small.jsonl", make_pairs(600))
    with pytest.raises(DataError) as exc:
        train("w", f"[{{path: {corpus}, weight: 1000000000000}}]", "train.max_steps=1")
    message = str(exc.value)
    assert "\n" not in message
    assert "small.jsonl" in message and "weight" in message and "GiB" in message
