"""The teacher (distill/teacher.py): a run teacher without CTranslate2 translates as translate does,
two exports of one teacher at once leave one whole folder, and the student's run says who taught
it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from distill_helpers import TINY, at_once, sources_of, student_config, torch_teacher
from helpers import train_tiny

from translator.distill.command import distilled_sources
from translator.distill.corpus import iter_pairs_tsv
from translator.distill.teacher import find_teacher, teacher_decoding


def test_corpus_of_a_run_teacher_without_ctranslate2_is_what_translate_gives(
    teacher_root: Path, student_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from translator.inference.predict import load_model, translate_sentences

    teacher = torch_teacher(teacher_root, monkeypatch)
    config = student_config(student_data)
    [entry] = distilled_sources(teacher, config, [str(student_data)])
    assert teacher.checkpoint is not None
    loaded = load_model(teacher.checkpoint, teacher.path, torch.device("cpu"))
    loaded.config = dataclasses.replace(loaded.config, decode=teacher_decoding(teacher, config))
    expected = translate_sentences(loaded, sources_of(student_data))
    assert [t for _, t in iter_pairs_tsv(Path(entry["path"]))] == expected


def test_the_student_run_says_its_teacher_on_the_terminal_and_in_tensorboard(
    teacher_root: Path, student_data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """distill's announcement reaches the run through train_run's `announce`, once the run's
    logger is open: the terminal line and teacher.json's fields as TensorBoard text."""
    from translator.config import load_config
    from translator.distill.teacher import announce_teacher
    from translator.run.paths import RunPaths
    from translator.training.train import train_run

    teacher = find_teacher("tiny", teacher_root / "weights")
    overrides = [f"data.source={student_data}", "train.max_steps=1", "train.eval_every=0",
                 f"data.store_dir={tmp_path / 'store'}"]  # fmt: skip
    paths = RunPaths.create("student", tmp_path / "runs", tmp_path / "weights")
    with caplog.at_level("INFO", logger="translator"):
        train_run(load_config(TINY, overrides), paths, None, "cpu",
                  announce=lambda logger: announce_teacher(teacher, logger))  # fmt: skip
    assert "distilled: trained on the translations of teacher tiny (step 80)" in caplog.text
    events = b"".join(p.read_bytes() for p in (tmp_path / "runs" / "student").glob("events.*"))
    assert b"run/teacher" in events and teacher.digest.encode() in events


EXPORT = """
from translator.distill.teacher import _exported_copy, find_teacher
from translator.export.engine import load_exported, translate_exported
teacher = find_teacher("tiny", Path(sys.argv[3]))
path = _exported_copy(teacher, "int8", Path(sys.argv[4]))
print(translate_exported(load_exported(path), ["one two three ."])[0])
print(path)
"""


def test_two_teacher_exports_at_once_both_succeed_and_the_folder_is_whole(tmp_path: Path) -> None:
    pytest.importorskip("ctranslate2")
    weights = train_tiny(tmp_path, 20).parent
    cache = tmp_path / "cache"
    done = at_once(EXPORT, str(weights), str(cache))
    for run in done:
        assert run.returncode == 0, run.stderr[-2000:]
    outputs = [run.stdout.splitlines() for run in done]
    assert outputs[0] == outputs[1]
    folder = Path(outputs[0][1])
    names = {p.name for p in folder.iterdir()}
    assert {"model.bin", "config.json", "tokenizer_src.json"} <= names
    left = [p.name for p in (cache / "teachers").iterdir() if p.name.startswith(".")]
    assert all(name.endswith(".lock") for name in left), left
