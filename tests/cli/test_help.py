"""Each command's --help shows its docstring as written: rich markup must not eat any of it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from translator.cli import app

COMMANDS = [c for c in app.registered_commands if c.callback is not None]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name or c.callback.__name__)
def test_help_shows_the_docstring_whole(command) -> None:
    name = command.name or command.callback.__name__.replace("_", "-")
    result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.replace("│", " ").split())
    summary = command.callback.__doc__.split("\n\n")[0].replace("\\[", "[")
    assert " ".join(summary.split()) in shown
