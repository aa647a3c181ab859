"""`translator distill` (distill/command.py): it trains a student that records its teacher, keeps
the original entries when asked, resumes only with the same teacher, trains on every thread it had,
and refuses what it cannot do in one line, writing nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from distill_helpers import TINY, student_config, torch_teacher
from helpers import cli, make_pairs, train_tiny, write_jsonl

from translator.config import load_config
from translator.distill.command import distill_command, distilled_sources
from translator.distill.corpus import PAIRS
from translator.errors import RunInUseError, TranslatorError
from translator.run.checkpoint import load_checkpoint
from translator.run.lock import run_lock


def test_keep_original_adds_the_entries_with_their_weights(
    teacher_root: Path, student_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    teacher = torch_teacher(teacher_root, monkeypatch)
    entries = [{"path": str(student_data), "weight": 2}]
    config = student_config(student_data, "distill.keep_original=true")
    out = distilled_sources(teacher, config, entries)
    assert [e["weight"] for e in out] == [2, 2]
    assert out[1] == entries[0] and Path(out[0]["path"]).name == PAIRS


def test_distill_trains_a_student_that_records_its_teacher(
    teacher_root: Path, student_data: Path, tmp_path: Path
) -> None:
    shutil.copytree(teacher_root / "weights", tmp_path / "weights")
    args = ["distill", "--teacher", "tiny", "--config", str(TINY), "--run", "student",
            "--set", f"data.source={student_data}", "--set", "train.max_steps=20",
            "--set", "train.eval_every=0", "--set", "distill.beam=2"]  # fmt: skip
    done = cli(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert f"distilled {student_data}: 230 pairs; 230 translated in" in done.stderr
    record = json.loads((tmp_path / "weights" / "student" / "teacher.json").read_text())
    assert record["teacher"] == "tiny" and record["step"] == 80
    config = load_config(tmp_path / "weights" / "student" / "config.yaml")
    [distilled] = config.data.sources()
    assert Path(distilled).name == PAIRS and config.data.weights() == [1]
    said = cli(tmp_path, "translate", "--run", "student", "one two .")
    assert said.returncode == 0 and said.stdout.strip(), said.stderr

    twice = cli(tmp_path, *args[:-2], "--set", "distill.beam=3")  # another corpus to translate
    assert twice.returncode != 0 and "already has checkpoints" in twice.stderr
    assert "translated in" not in twice.stderr, "refused before the teacher translates anything"
    shutil.rmtree(Path(distilled).parent)  # its prepared store holds what it needs
    again = cli(tmp_path, *args, "--set", "train.max_steps=30", "--set", "distill.beam=3",
                "--resume")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "resuming student student on the distilled data it started with" in again.stderr
    assert "translated" not in again.stderr, "a resumed student translates nothing"
    assert load_checkpoint(tmp_path / "weights" / "student" / "latest.pt")["progress"]["step"] == 30


def test_bad_teachers_and_configs_are_one_line_errors(
    teacher_root: Path, student_data: Path, tmp_path: Path
) -> None:
    shutil.copytree(teacher_root / "weights", tmp_path / "weights")
    base = ["distill", "--config", str(TINY), "--set", f"data.source={student_data}"]
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "not-a-run" / "model.bin").write_bytes(b"\0" * 16)
    (tmp_path / "junk.pt").write_text("not a checkpoint")
    cases = {
        "nobody": ([*base, "--teacher", "nobody"], "--teacher nobody: no run"),
        "a directory": (
            [*base, "--teacher", str(tmp_path / "not-a-run")],
            "holds neither a checkpoint (*.pt) nor an exported model",
        ),
        "a file": (
            [*base, "--teacher", str(tmp_path / "junk.pt")],
            "give a trained run or an exported model directory",
        ),
        "resume nothing": (
            [*base, "--teacher", "tiny", "--run", "new", "--resume"],
            "--resume: run 'new' has no checkpoint",
        ),
        "langs": (
            [*base, "--teacher", "tiny", "--set", "data.lang_src=fr"],
            "the teacher tiny translates en-it",
        ),
        "no config": (["distill", "--teacher", "tiny"], "give the student's --config"),
        "same run": ([*base, "--teacher", "tiny"], "--run tiny is the teacher's own run"),
    }
    for name, (args, said) in cases.items():
        done = cli(tmp_path, *args)
        assert done.returncode != 0, name
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], (name, done.stderr)
    assert [p.name for p in (tmp_path / "weights").iterdir()] == ["tiny"], "nothing written"


def test_a_resumed_student_whose_teacher_changed_is_refused(
    teacher_root: Path, student_data: Path, tmp_path: Path
) -> None:
    shutil.copytree(teacher_root / "weights", tmp_path / "weights")
    student = tmp_path / "weights" / "student"
    student.mkdir()
    record = {"teacher": "tiny", "kind": "run", "path": "x", "checkpoint": "old.pt", "step": 5,
              "sha256": "0" * 64}  # fmt: skip
    (student / "teacher.json").write_text(json.dumps(record))
    done = cli(tmp_path, "distill", "--teacher", "tiny", "--config", str(TINY), "--run",
               "student", "--set", f"data.source={student_data}", "--resume")  # fmt: skip
    assert done.returncode != 0
    assert "was distilled from tiny (step 5, old.pt), but that teacher now has other weights" in (
        done.stderr
    )


def test_the_student_trains_on_every_thread_it_had_before_the_teacher_translated(
    teacher_root: Path, student_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading CTranslate2 set torch's threads to 1, and the student trained on one core."""
    pytest.importorskip("ctranslate2")
    from translator.distill import command

    seen: list[int] = []
    monkeypatch.setattr(
        "translator.training.train.train_run",
        lambda *a, **k: seen.append(torch.get_num_threads()),
    )
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        command.distill_command(
            str(teacher_root / "ct2-int8"), TINY, [f"data.source={student_data}",
            "distill.beam=2", f"data.store_dir={tmp_path / 'store'}"], "student", None, None,
            tmp_path / "runs", tmp_path / "weights")  # fmt: skip
    finally:
        torch.set_num_threads(before)
    assert seen == [2]


def test_a_refused_distill_writes_nothing_into_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run S held by a running student: a distill into S is refused, and S's teacher.json is
    still the one of the student that runs."""

    def missing() -> None:
        raise TranslatorError("CTranslate2 is not installed")

    monkeypatch.setattr("translator.export.engine.import_ctranslate2", missing)
    train_tiny(tmp_path, 20)
    data = write_jsonl(tmp_path / "student.jsonl", make_pairs(100, seed=7))
    student = tmp_path / "weights" / "s"
    student.mkdir()
    record = {"teacher": "real", "kind": "run", "path": "/real", "checkpoint": "/real/best.pt",
              "step": 500, "sha256": "1" * 64}  # fmt: skip
    (student / "teacher.json").write_text(json.dumps(record))
    before = (student / "teacher.json").read_bytes()
    with run_lock(student, "s"), pytest.raises(RunInUseError):
        distill_command("tiny", TINY, [f"data.source={data}", "distill.beam=1"], "s", None, "cpu")
    assert (student / "teacher.json").read_bytes() == before
