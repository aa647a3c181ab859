"""`translator distill`: the distilled corpus is the teacher's translations, resumes exactly, is
keyed by the teacher's weights, filters by chrF exactly; the command trains a student on it and
refuses what it cannot do in one line."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import ROOT, cli, export, make_pairs, train_tiny, write_jsonl

from translator.config import Config, load_config
from translator.distill import corpus as corpus_module
from translator.distill import teacher as teacher_module
from translator.distill.command import distilled_sources
from translator.distill.corpus import PAIRS, iter_pairs_tsv
from translator.distill.teacher import Teacher, find_teacher, teacher_decoding
from translator.errors import DataError, TranslatorError
from translator.run.checkpoint import load_checkpoint, save_checkpoint

TINY = ROOT / "configs" / "tiny.yaml"


@pytest.fixture(scope="module")
def teacher_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a tiny trained teacher (run `tiny`) and its int8 export."""
    root = tmp_path_factory.mktemp("teacher")
    train_tiny(root, 80)
    export(root, "int8")
    return root


@pytest.fixture
def student_data(tmp_path: Path) -> Path:
    """A corpus for the student: other toy sentences than the teacher's."""
    return write_jsonl(tmp_path / "student.jsonl", make_pairs(230, seed=7))


def student_config(data: Path, *sets: str) -> Config:
    return load_config(TINY, [f"data.source={data}", "distill.beam=2", *sets])


def sources_of(data: Path) -> list[str]:
    return [json.loads(line)["translation"]["en"] for line in data.read_text().splitlines()]


def torch_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Translate with PyTorch, as without CTranslate2 installed."""

    def missing() -> None:
        raise TranslatorError("CTranslate2 is not installed")

    monkeypatch.setattr("translator.export.engine.import_ctranslate2", missing)


def torch_teacher(teacher_root: Path, monkeypatch: pytest.MonkeyPatch) -> Teacher:
    """The tiny run as a teacher, translating with PyTorch."""
    torch_only(monkeypatch)
    return find_teacher("tiny", teacher_root / "weights")


def test_corpus_holds_exactly_the_exported_teachers_translations(
    teacher_root: Path, student_data: Path, tmp_path: Path
) -> None:
    pytest.importorskip("ctranslate2")
    model = teacher_root / "ct2-int8"
    teacher = find_teacher(str(model), teacher_root / "weights")
    [entry] = distilled_sources(teacher, student_config(student_data), [str(student_data)])
    pairs = list(iter_pairs_tsv(Path(entry["path"])))
    sources = sources_of(student_data)
    done = cli(tmp_path, "translate", "--model", str(model), "--beam", "2", *sources)
    assert done.returncode == 0, done.stderr
    assert [s for s, _ in pairs] == sources
    assert [t for _, t in pairs] == done.stdout.splitlines()


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


def test_an_interrupted_translation_resumed_equals_an_uninterrupted_one(
    teacher_root: Path, student_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    teacher = torch_teacher(teacher_root, monkeypatch)
    whole = student_config(student_data, "distill.chunk=40", f"data.store_dir={tmp_path / 'a'}")
    [entry] = distilled_sources(teacher, whole, [str(student_data)])
    expected = Path(entry["path"]).read_bytes()

    cut = student_config(student_data, "distill.chunk=40", f"data.store_dir={tmp_path / 'b'}")
    real = teacher_module._torch_teacher
    calls: list[int] = []

    def dies_at_the_third_chunk(*args, **kwargs):  # type: ignore[no-untyped-def]
        translate = real(*args, **kwargs)

        def counted(sentences: list[str]) -> list[str]:
            calls.append(len(sentences))
            if len(calls) == 3:
                raise KeyboardInterrupt
            return translate(sentences)

        return counted

    monkeypatch.setattr(teacher_module, "_torch_teacher", dies_at_the_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        distilled_sources(teacher, cut, [str(student_data)])
    [partial] = (tmp_path / "b").rglob(corpus_module.PARTIAL)
    with partial.open("a", encoding="utf-8") as f:
        f.write("half a line that never ended")  # as a kill in the middle of a write leaves it
    calls.clear()
    monkeypatch.setattr(teacher_module, "_torch_teacher", real)
    counted: list[int] = []
    monkeypatch.setattr(
        corpus_module, "_translate_rest", _spy(corpus_module._translate_rest, counted)
    )
    [entry] = distilled_sources(teacher, cut, [str(student_data)])
    assert Path(entry["path"]).read_bytes() == expected
    assert counted == [80], "the two whole chunks are kept, not translated again"
    assert not partial.exists()


def _spy(fn, record: list[int]):  # type: ignore[no-untyped-def]
    def wrapped(source, data, partial, start, *rest):  # type: ignore[no-untyped-def]
        record.append(start)
        return fn(source, data, partial, start, *rest)

    return wrapped


def distilled_once(
    teacher_root: Path, data: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> tuple[Teacher, dict[str, Any], list[str]]:
    """The tiny teacher, the corpus it made of `data`, and a list that grows by one each time the
    teacher is opened from then on (to translate something not made before)."""
    torch_only(monkeypatch)
    teacher = find_teacher("tiny", teacher_root / "weights")
    [first] = distilled_sources(teacher, config, [str(data)])
    opened: list[str] = []
    real = teacher_module._torch_teacher
    monkeypatch.setattr(
        teacher_module, "_torch_teacher", lambda *a, **k: opened.append("x") or real(*a, **k)
    )
    return teacher, first, opened


def test_the_corpus_is_reused_and_keyed_by_the_teachers_checkpoint(
    teacher_root: Path, student_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = student_config(student_data)
    teacher, first, opened = distilled_once(teacher_root, student_data, config, monkeypatch)
    [again] = distilled_sources(teacher, config, [str(student_data)])
    assert again == first and opened == [], "the same teacher on the same data: reused"

    changed = tmp_path / "weights" / "tiny"
    shutil.copytree(teacher.path, changed)
    state = load_checkpoint(teacher.checkpoint)
    state["model"]["output.bias"] = state["model"]["output.bias"] + 1.0
    save_checkpoint(state, changed / teacher.checkpoint.name)
    other = find_teacher(str(changed), tmp_path / "weights")
    assert other.digest != teacher.digest
    [second] = distilled_sources(other, config, [str(student_data)])
    assert second["path"] != first["path"] and opened == ["x"]


def test_the_corpus_is_keyed_by_what_the_data_holds_not_where_or_when_it_was_written(
    teacher_root: Path, student_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy, a move or a fresh download of the same file (new path, new mtime) finds the corpus
    made from it; a file holding other pairs makes another."""
    config = student_config(student_data)
    teacher, first, opened = distilled_once(teacher_root, student_data, config, monkeypatch)
    copy = tmp_path / "elsewhere" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(student_data, copy)
    os.utime(copy, ns=(10**18, 10**18))
    [moved] = distilled_sources(teacher, config, [str(copy)])
    assert moved["path"] == first["path"] and opened == [], "the same content: reused"

    lines = copy.read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[:-1]))  # one pair fewer
    [edited] = distilled_sources(teacher, config, [str(copy)])
    assert edited["path"] != first["path"] and opened == ["x"], "other content: translated"
    assert len(list(iter_pairs_tsv(Path(edited["path"])))) == len(lines) - 1


def test_the_chrf_filter_replaces_exactly_the_translations_below_it(
    teacher_root: Path, student_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sacrebleu.metrics import CHRF

    teacher = torch_teacher(teacher_root, monkeypatch)
    [plain] = distilled_sources(teacher, student_config(student_data), [str(student_data)])
    outputs = [t for _, t in iter_pairs_tsv(Path(plain["path"]))]
    refs = [json.loads(line)["translation"]["it"] for line in student_data.read_text().splitlines()]
    scores = [CHRF().sentence_score(o, [r]).score for o, r in zip(outputs, refs, strict=True)]
    threshold = sorted(scores)[len(scores) // 2]  # about half below it: both kinds occur
    config = student_config(student_data, f"distill.min_chrf={threshold}")
    [kept] = distilled_sources(teacher, config, [str(student_data)])
    filtered = [t for _, t in iter_pairs_tsv(Path(kept["path"]))]
    expected = [r if s < threshold else o for o, r, s in zip(outputs, refs, scores, strict=True)]
    assert filtered == expected
    assert 0 < sum(s < threshold for s in scores) < len(scores)


def test_a_damaged_corpus_is_refused_by_name(
    teacher_root: Path, student_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    teacher = torch_teacher(teacher_root, monkeypatch)
    config = student_config(student_data)
    [entry] = distilled_sources(teacher, config, [str(student_data)])
    path = Path(entry["path"])
    path.write_text(path.read_text().replace("\t", "\tx", 1))
    with pytest.raises(DataError, match=f"distilled corpus {path.parent}.*damaged"):
        distilled_sources(teacher, config, [str(student_data)])


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


def test_an_empty_source_or_a_longer_partial_is_one_error(
    teacher_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    teacher = torch_teacher(teacher_root, monkeypatch)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match="empty.jsonl: no sentence pairs to translate"):
        distilled_sources(teacher, student_config(empty), [str(empty)])

    data = write_jsonl(tmp_path / "few.jsonl", make_pairs(12, seed=3))
    config = student_config(data, f"data.store_dir={tmp_path / 'store'}")
    [entry] = distilled_sources(teacher, config, [str(data)])
    corpus = Path(entry["path"]).parent
    lines = [t for _, t in iter_pairs_tsv(Path(entry["path"]))]
    for name in (PAIRS, corpus_module.META):
        (corpus / name).unlink()
    (corpus / corpus_module.PARTIAL).write_text("".join(f"{t}\n" for t in lines * 2))
    with pytest.raises(DataError, match="24 translations kept but .* has 12 pairs"):
        distilled_sources(teacher, config, [str(data)])


def test_damaged_records_are_one_line_errors(
    teacher_root: Path, student_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    teacher = torch_teacher(teacher_root, monkeypatch)
    config = student_config(student_data, "distill.min_chrf=30")
    [entry] = distilled_sources(teacher, config, [str(student_data)])
    corpus = Path(entry["path"]).parent
    [record] = corpus.glob("min_chrf-*.json")
    record.write_text("{not json")
    with pytest.raises(DataError, match="is damaged"):
        distilled_sources(teacher, config, [str(student_data)])
    (corpus / corpus_module.META).write_text("[1, 2]")
    with pytest.raises(DataError, match=f"distilled corpus {corpus} is damaged"):
        distilled_sources(teacher, config, [str(student_data)])


def test_a_hub_corpus_is_keyed_by_its_configuration() -> None:
    from translator.data.read import Source
    from translator.distill.corpus import corpus_key

    config = load_config(TINY)
    hub = Source("hub", "opus_books")
    datas = [dataclasses.replace(config.data, hub_config=name) for name in ("en-it", "en-fr", None)]
    keys = {corpus_key("0" * 64, "torch", hub, data, config.decode) for data in datas}
    assert len(keys) == 3


def test_the_student_trains_on_every_thread_it_had_before_the_teacher_translated(
    teacher_root: Path, student_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading CTranslate2 set torch's threads to 1, and the student trained on one core."""
    pytest.importorskip("ctranslate2")
    from translator.distill import command

    seen: list[int] = []
    monkeypatch.setattr(
        "translator.training.train.train_command",
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


def test_the_student_run_says_its_teacher_on_the_terminal_and_in_tensorboard(
    teacher_root: Path, student_data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """distill's announcement reaches the run through train_command's `announce`, once the
    run's logger is open: the terminal line and teacher.json's fields as TensorBoard text."""
    from translator.distill.teacher import announce_teacher
    from translator.training.train import train_command

    teacher = find_teacher("tiny", teacher_root / "weights")
    overrides = [f"data.source={student_data}", "train.max_steps=1", "train.eval_every=0",
                 f"data.store_dir={tmp_path / 'store'}"]  # fmt: skip
    with caplog.at_level("INFO", logger="translator"):
        train_command(TINY, overrides, "student", None, "cpu", tmp_path / "runs",
                      tmp_path / "weights",
                      announce=lambda logger: announce_teacher(teacher, logger))  # fmt: skip
    assert "distilled: trained on the translations of teacher tiny (step 80)" in caplog.text
    events = b"".join(p.read_bytes() for p in (tmp_path / "runs" / "student").glob("events.*"))
    assert b"run/teacher" in events and teacher.digest.encode() in events
