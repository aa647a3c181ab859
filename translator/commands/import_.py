"""`translator import`: an OPUS-MT (Marian) model of Hugging Face Transformers as a run."""

from __future__ import annotations

from pathlib import Path


def import_command(
    source: str,
    run: str,
    weights_root: Path = Path("weights"),
    target_language: str | None = None,
    revision: str | None = None,
) -> Path:
    """`translator import SOURCE --run NAME`: the model as the run weights_root/NAME (it says
    what it imported in a line of the log)."""
    from translator.interop.importer import import_model

    return import_model(source, run, weights_root, target_language, revision)
