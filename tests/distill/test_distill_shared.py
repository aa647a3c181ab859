"""What students share is made once, whole, whoever asks at the same time: two `min_chrf`
filters of one corpus and two exports of one teacher at once both succeed and leave one whole
file or folder; a distill refused its run writes nothing into it; resuming a translation reads
the kept translations a piece at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from helpers import ROOT, make_pairs, train_tiny, write_jsonl

from translator.distill.command import distill_command
from translator.distill.corpus import PAIRS, whole_lines
from translator.errors import RunInUseError, TranslatorError
from translator.run.lock import run_lock

TINY = ROOT / "configs" / "tiny.yaml"

WAIT = """
import sys, time
from pathlib import Path
Path(sys.argv[1]).touch()
while not Path(sys.argv[2]).exists():
    time.sleep(0.002)
"""


def at_once(code: str, *args: str, n: int = 2) -> list[subprocess.CompletedProcess]:
    """Run `code` (after WAIT: it starts when told) in `n` processes released together."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ready = [Path(f"ready{k}") for k in range(n)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WAIT + code, str(ready[k]), "go", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for k in range(n)
    ]
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    Path("go").touch()
    done = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


FILTER = """
import json
from translator.config import load_config
from translator.data.read import resolve_sources
from translator.distill.filtering import filtered_pairs
config = load_config(Path(sys.argv[4]), [f"data.source={sys.argv[5]}"])
source = resolve_sources(config.data)[0]
path, record = filtered_pairs(Path(sys.argv[3]), source, config.data, 40.0)
print(json.dumps(record))
"""


def test_two_chrf_filters_at_once_both_succeed_with_one_whole_file(tmp_path: Path) -> None:
    pairs = make_pairs(6000, seed=11)
    source = write_jsonl(tmp_path / "refs.jsonl", pairs)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with (corpus / PAIRS).open("w", encoding="utf-8") as f:  # every other translation garbled
        for k, (en, it) in enumerate(pairs):
            f.write(f"{en}\t{it if k % 2 else ' '.join(reversed(it.split()))[::-1]}\n")
    done = at_once(FILTER, str(corpus), str(TINY), str(source))
    for run in done:
        assert run.returncode == 0, run.stderr[-2000:]
    records = [json.loads(run.stdout) for run in done]
    assert records[0] == records[1]
    lines = (corpus / "min_chrf-40.tsv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(pairs) == records[0]["pairs"]
    assert 0 < records[0]["replaced"] < len(pairs)
    assert not [p.name for p in corpus.iterdir() if p.name.endswith(".tmp")]


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


DISTIL = """
import json
from translator.config import load_config
from translator.distill.command import distilled_sources
from translator.distill.teacher import find_teacher
teacher = find_teacher("tiny", Path(sys.argv[3]))
config = load_config(Path(sys.argv[4]), [f"data.source={sys.argv[5]}", "distill.beam=1"])
print(json.dumps(distilled_sources(teacher, config, [sys.argv[5]])))
"""


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
