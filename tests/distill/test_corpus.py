"""The distilled corpus (distill/corpus.py): the teacher's translations, resumed exactly after an
interruption, keyed by the teacher's weights and what the data holds, shared by students made at
once, and refused by name when damaged."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from distill_helpers import TINY, at_once, sources_of, student_config, torch_only, torch_teacher
from helpers import cli, make_pairs, train_tiny, write_jsonl

from translator.config import Config, load_config
from translator.distill import corpus as corpus_module
from translator.distill import teacher as teacher_module
from translator.distill.command import distilled_sources
from translator.distill.corpus import PAIRS, iter_pairs_tsv, whole_lines
from translator.distill.teacher import Teacher, find_teacher
from translator.errors import DataError
from translator.run.checkpoint import load_checkpoint, save_checkpoint


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


DISTIL = """
import json
from translator.config import load_config
from translator.distill.command import distilled_sources
from translator.distill.teacher import find_teacher
teacher = find_teacher("tiny", Path(sys.argv[3]))
config = load_config(Path(sys.argv[4]), [f"data.source={sys.argv[5]}", "distill.beam=1"])
print(json.dumps(distilled_sources(teacher, config, [sys.argv[5]])))
"""


def test_resuming_a_translation_reads_the_kept_translations_a_piece_at_a_time(
    tmp_path: Path,
) -> None:
    partial = tmp_path / "translations.partial"
    line = b"una frase tradotta dal maestro .\n"
    with partial.open("wb") as f:
        for _ in range(64):
            f.write(line * ((1 << 20) // len(line)))
        f.write(b"cut sho")
    lines = 64 * ((1 << 20) // len(line))
    tracemalloc.start()
    try:
        assert whole_lines(partial) == lines
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert partial.read_bytes().endswith(line)
    assert peak < 32 * 2**20, f"{peak / 2**20:.0f} MiB read at once"


def test_two_students_of_one_teacher_on_one_data_at_once_share_one_corpus(tmp_path: Path) -> None:
    """The second waits for the corpus the first is translating, then reuses it."""
    weights = train_tiny(tmp_path, 20).parent
    data = write_jsonl(tmp_path / "student.jsonl", make_pairs(3000, seed=7))
    done = at_once(DISTIL, str(weights), str(TINY), str(data))
    for run in done:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = (json.loads(run.stdout) for run in done)
    assert first == second
    pairs = Path(first[0]["path"]).read_text(encoding="utf-8").splitlines()
    assert len(pairs) == 3000
