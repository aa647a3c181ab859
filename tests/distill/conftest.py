"""The distill wing's fixtures: a tiny trained teacher (trained once for the wing's tests) and a
corpus for its students."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import export, make_pairs, train_tiny, write_jsonl


@pytest.fixture(scope="session")
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
