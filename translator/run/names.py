"""The names of the files a run, a prepared store and an export share, without torch (the
CTranslate2 engine reads an export's tokenizers through here)."""

from __future__ import annotations

from pathlib import Path

IMPORTED = "imported.json"
"""In a run made by `translator import` (not trained here): where its weights came from."""


def tokenizer_file(folder: Path, side: str) -> Path:
    """The tokenizer of `side` ("src" or "tgt") in a run, a store or an export folder."""
    return folder / f"tokenizer_{side}.json"
