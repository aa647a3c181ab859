"""`translator translate`: the arguments, a file or stdin translated by a run (PyTorch) or an
exported --model (CTranslate2); and the fast path of `translate --model`, which answers before
typer is even built."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from translator.commands import only_model, run_command
from translator.errors import ConfigError

if TYPE_CHECKING:
    from translator.inference.documents import Document


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
    """The input and output as a Document; `--model DIR` decoded by CTranslate2, a run by torch."""
    from translator.inference.documents import Document

    document = Document(input_, output, format_)
    if model is not None:
        only_model(run=run, checkpoint=checkpoint, attention=attention, device=device)
        return translate_model_command(texts, model, beam, overrides, document)
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


def translate_run(
    texts: list[str],
    run: str | None,
    checkpoint: Path | None,
    beam: int | None,
    overrides: list[str],
    device_name: str | None,
    weights_root: Path = Path("weights"),
    attention: Path | None = None,
    attention_layer: int | None = None,
    attention_self: bool = False,
    document: Document | None = None,
) -> None:
    """`translator translate`: the text arguments, else --input or stdin, to --output or stdout."""
    from translator.device import resolve_device
    from translator.inference.documents import Document, translate_inputs
    from translator.inference.predict import (
        load_model,
        override_config,
        resolve_beam,
        save_attention,
        translate_sentences,
    )
    from translator.run.paths import find_checkpoint

    document = document or Document()
    if attention is not None and not texts:
        raise ConfigError("--attention: give the sentence as an argument, not on stdin")
    ckpt, run_dir = find_checkpoint(run, checkpoint, weights_root)
    loaded = load_model(ckpt, run_dir, resolve_device(device_name))
    loaded.config = override_config(loaded.config, None, overrides, "translate", ("decode",))
    beam = resolve_beam(beam, loaded.config)
    print(f"using {ckpt} (step {loaded.step:,})", file=sys.stderr)
    try:
        translate_inputs(
            texts,
            document,
            lambda lines, numbers: translate_sentences(loaded, lines, beam, numbers),
            loaded.config.decode.batch_size * 16,
        )
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    if attention is not None:
        for n, text in enumerate(texts, start=1):
            path = attention if len(texts) == 1 else attention.with_stem(f"{attention.stem}-{n}")
            save_attention(loaded, text, path, beam, attention_layer, attention_self)
            print(f"attention maps saved to {path}", file=sys.stderr)


def translate_model_command(
    texts: list[str],
    model_dir: Path,
    beam: int | None,
    overrides: list[str],
    document: Document | None = None,
) -> None:
    """`translator translate --model DIR`: like `translate --run`, decoded by CTranslate2."""
    from translator.export.engine import load_exported, override_decode, translate_exported
    from translator.inference.documents import Document, translate_inputs

    # A few sentences as arguments: one thread starts and finishes first (0.07 s against 0.18 s
    # for the first "Hello" with two threads while the other core was busy).
    model = load_exported(model_dir, threads=1 if 0 < len(texts) <= 16 else None)
    model.config = override_decode(model.config, overrides, "translate")
    beam = model.config.decode.beam if beam is None else beam
    if beam < 1:
        raise ConfigError(f"--beam {beam}: the beam size must be at least 1 (1 = greedy)")
    print(
        f"using {model_dir} (step {model.step:,}, CTranslate2 {model.arithmetic})",
        file=sys.stderr,
    )
    try:
        translate_inputs(
            texts,
            document or Document(),
            lambda lines, numbers: translate_exported(model, lines, beam, numbers),
            model.config.decode.batch_size * 16,
        )
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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
        translate_model_command(parsed.text, parsed.model, parsed.beam, parsed.set_)

    try:
        run_command(go)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    return True
