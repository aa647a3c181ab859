"""The chrF filter (distill/filtering.py, distill.min_chrf): exactly the translations below it are
replaced by their reference, and two filters of one corpus at once leave one whole file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from distill_helpers import TINY, at_once, student_config, torch_teacher
from helpers import make_pairs, write_jsonl

from translator.distill.command import distilled_sources
from translator.distill.corpus import PAIRS, iter_pairs_tsv


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
