"""JSON files the project writes beside its data and runs, read back with a one-line answer when
they are damaged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from translator.durable import publish_text
from translator.errors import CheckpointError


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when the file holds anything else (damaged): the caller
    says what that means in one line."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def save_word_table(table: dict[str, Any], path: Path) -> None:
    """Write a table of words whole (translator/durable.py)."""
    publish_text(path, json.dumps(table, ensure_ascii=False, indent=0) + "\n")


def load_word_table(path: Path, what: str, valid: Callable[[Any], bool]) -> dict[str, Any] | None:
    """The table of words in `path` (None where there is none: made before it existed); one whose
    values are not all `valid` is a one-line CheckpointError."""
    if not path.is_file():
        return None
    try:
        table = read_json_object(path)
    except OSError:
        table = None
    if table is None or not all(isinstance(k, str) and valid(v) for k, v in table.items()):
        raise CheckpointError(
            f"{path}: not a {what} (a JSON object of words); delete it to translate "
            "without one, or copy it again from the run's prepared data"
        )
    return table
