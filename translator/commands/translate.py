"""`translator translate`: the arguments, a file or stdin translated by a run (PyTorch) or an
exported --model (CTranslate2); and the fast path of `translate --model`, which answers before
typer is even built."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from translator.commands import only_model, run_command


def translate_command(
    texts: list[str],
    run: str | None,
    checkpoint: Path | None,
    beam: int | None,
    overrides: list[str],
    attention: Path | None,
    attention_layer: int | None,
    attention_self: bool,
    input_: Path | None,
    output: Path | None,
    format_: str | None,
    device: str | None,
    weights_dir: Path,
    model: Path | None,
) -> None:
    """The input and output as a Document; `--model DIR` to the export wing, a run to inference."""
    from translator.inference.documents import Document

    document = Document(input_, output, format_)
    if model is not None:
        from translator.export.engine import translate_model_command

        only_model(run=run, checkpoint=checkpoint, attention=attention, device=device)
        return translate_model_command(texts, model, beam, overrides, document)
    from translator.inference.predict import translate_command as translate_run

    translate_run(
        texts,
        run,
        checkpoint,
        beam,
        overrides,
        device,
        weights_dir,
        attention,
        attention_layer,
        attention_self,
        document,
    )


def translate_model_fast(args: list[str]) -> bool:
    """`translate --model DIR [--beam N] [--set K=V]... [TEXT]...` without typer: True when done.

    typer builds a pydantic adapter per option (about 0.2 s), a third of the 0.5 s that
    `translate --model DIR "Hello"` may take. Anything else (help, other options, a typo) returns
    False and goes through typer, which answers it as usual.
    """
    import argparse

    if args[:1] != ["translate"] or not any(a.startswith("--model") for a in args):
        return False
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--beam", type=int)
    parser.add_argument("--set", dest="set_", action="append", default=[])
    parser.add_argument("text", nargs="*")
    try:
        parsed, unknown = parser.parse_known_args(args[1:])
    except (argparse.ArgumentError, SystemExit):
        return False
    if unknown or any(t.startswith("-") for t in parsed.text):
        return False

    def go() -> None:
        from translator.export.engine import translate_model_command

        translate_model_command(parsed.text, parsed.model, parsed.beam, parsed.set_)

    try:
        run_command(go)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    return True
