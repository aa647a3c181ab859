"""What the `translator` command line does around its commands (cli.py): errors as one line and
an exit code, options that exclude each other, `--resume` without a path, and the fast path of
`translate --model`, which answers before typer is even built; and the options several commands
share."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer


def only_model(**given: Any) -> None:
    """`--model DIR` carries its own weights and tokenizers: refuse options that pick others."""
    from translator.errors import ConfigError

    for name, value in given.items():
        if value is not None:
            raise ConfigError(f"--model and --{name} exclude each other; give one of them")


def export_in_format(
    format_: str,
    run: str | None,
    checkpoint: Path | None,
    output: Path,
    quantization: str,
    weights_dir: Path,
) -> None:
    """`translator export`: to CTranslate2, or with --format transformers to a Marian directory."""
    from translator.errors import ConfigError

    if format_ == "transformers":
        from translator.interop.command import export_transformers_command

        export_transformers_command(run, checkpoint, output, weights_dir)
    elif format_ == "ctranslate2":
        from translator.export.convert import export_command

        export_command(run, checkpoint, output, quantization, weights_dir)
    else:
        raise ConfigError(f"--format {format_}: choose ctranslate2 or transformers")


def run_command(fn: Callable[[], Any], logs: bool = True) -> None:
    """Call `fn`, turning user-facing errors into one line on stderr and an exit code.

    With `logs`, the commands' progress (the "translator" logger) goes to stderr, one message a
    line: from every process, or under torchrun from rank 0 alone (the others say warnings).
    """
    from translator.errors import TranslatorError

    if logs:
        main = os.environ.get("RANK", "0") == "0"
        level = logging.INFO if main else logging.WARNING
        logging.basicConfig(level=level, format="%(message)s", stream=sys.stderr)
    try:
        fn()
    except TranslatorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise typer.Exit(130) from None


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


def bare_resume_means_latest(args: list[str]) -> list[str]:
    """`--resume` followed by another option (or nothing) means `--resume=latest`.

    Click would otherwise take the next option, e.g. `--set`, as the checkpoint path.
    """
    out = []
    for i, arg in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else None
        if arg == "--resume" and (following is None or following.startswith("-")):
            arg = "--resume=latest"
        out.append(arg)
    return out


# The options several commands share.
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="YAML config file, e.g. configs/cpu.yaml.")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config key: section.key=value (repeatable)."),
]
RunOpt = Annotated[
    str | None,
    typer.Option(
        "--run",
        "--name",
        help="Run name (default: the config file's stem). Under torchrun, spell it --name.",
    ),
]
DeviceOpt = Annotated[
    str | None, typer.Option("--device", help="cpu, cuda or mps (default: the best available).")
]
ModelRunOpt = Annotated[
    str | None,
    typer.Option("--run", help="Run to use (default: the one trained last under --weights-dir)."),
]
CheckpointOpt = Annotated[
    Path | None,
    typer.Option(
        "--checkpoint",
        help="Checkpoint file (default: the run's weight average, ema.pt or averaged.pt, the "
        "newer, when current; else best.pt; else latest.pt).",
    ),
]
ModelDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--model", help="A directory from `translator export`: decode with CTranslate2, no torch."
    ),
]
BeamOpt = Annotated[
    int | None,
    typer.Option("--beam", help="Beam size; 1 = greedy (default: the run's decode.beam)."),
]
RunsDirOpt = Annotated[Path, typer.Option("--runs-dir", help="Where TensorBoard runs go.")]
WeightsDirOpt = Annotated[Path, typer.Option("--weights-dir", help="Where checkpoints go.")]
