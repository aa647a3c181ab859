"""Marian directories made once a session (tests/interop/marian_models.py), and their imports."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers", reason='the interop tests need pip install -e ".[hf]"')
pytest.importorskip("sentencepiece", reason='the interop tests need pip install -e ".[hf]"')

from marian_models import make_marian  # noqa: E402

from translator.interop.importer import import_model  # noqa: E402


@pytest.fixture(scope="session")
def marian_shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_marian(tmp_path_factory.mktemp("marian") / "shared", shared=True)


@pytest.fixture(scope="session")
def marian_separate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_marian(tmp_path_factory.mktemp("marian") / "separate", shared=False, seed=1)


@pytest.fixture(scope="session", params=["shared", "separate"])
def marian(request: pytest.FixtureRequest) -> Path:
    """Each kind of Marian directory: one vocabulary, and one per side."""
    return request.getfixturevalue(f"marian_{request.param}")


@pytest.fixture(scope="session")
def imported(marian: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`marian` imported as a run; its run directory."""
    return import_model(str(marian), "imp", tmp_path_factory.mktemp("weights"))
