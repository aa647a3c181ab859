"""The command layer: one module per verb of the command line, turning its parsed options into
calls to the wings' functions, and `run_command`, which sets up logging once and turns a
user-facing error into one line on stderr and an exit code.

May import: anything (the top of the layering). Only cli.py imports it: cli.py parses, a module
here calls.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import typer


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


def only_model(**given: Any) -> None:
    """`--model DIR` carries its own weights and tokenizers: refuse options that pick others."""
    from translator.errors import ConfigError

    for name, value in given.items():
        if value is not None:
            raise ConfigError(f"--model and --{name} exclude each other; give one of them")
