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


def test_the_command_list_shows_each_summary_on_its_own_lines() -> None:
    """`translator --help` lists each command's first paragraph as written: a summary wrapped
    in the docstring came out with a line break in mid-sentence."""
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for command in COMMANDS:
        summary = command.callback.__doc__.split("\n\n")[0].replace("\\[", "[").strip()
        assert "\n" not in summary, command.callback.__name__
        assert summary in result.output, summary


@pytest.mark.parametrize("command", ["translate", "validate", "serve", "export"])
def test_checkpoint_help_names_the_weight_average_first(command: str) -> None:
    """The code takes ema.pt / averaged.pt before best.pt (run/paths.py): the help says so."""
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    shown = " ".join(result.output.replace("│", " ").split())
    assert "ema.pt or averaged.pt, the newer, when current; else best.pt; else latest.pt" in shown
