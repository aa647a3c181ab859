"""The `translator` command line: parse options and call one function. No logic lives here.

Heavy libraries (torch, datasets, tensorboard) are imported inside the commands, so `--help`
answers at once.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from translator.commands import run_command
from translator.commands.options import (
    BeamOpt,
    CheckpointOpt,
    ConfigOpt,
    DeviceOpt,
    ModelDirOpt,
    ModelRunOpt,
    RunOpt,
    RunsDirOpt,
    SetOpt,
    WeightsDirOpt,
    bare_resume_means_latest,
)
from translator.commands.translate import translate_model_fast

app = typer.Typer(
    name="translator",
    help="Train, evaluate and use an English->Italian Transformer translator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Train, evaluate and use an English->Italian Transformer translator."""


@app.command()
def train(
    config: ConfigOpt = None,
    set_: SetOpt = None,
    run: RunOpt = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="[PATH]",
            help="Continue the run from its latest checkpoint (or from PATH).",
        ),
    ] = None,
    init_from: Annotated[
        str | None,
        typer.Option(
            "--init-from",
            metavar="RUN|PATH",
            help="Start from this run's weights and tokenizers (a run name, its directory or a "
            "checkpoint file): fine-tuning, adaptation. Same as train.init_from.",
        ),
    ] = None,
    device: DeviceOpt = None,
    runs_dir: RunsDirOpt = Path("runs"),
    weights_dir: WeightsDirOpt = Path("weights"),
) -> None:
    """Train a model; TensorBoard events go to runs/NAME, checkpoints to weights/NAME."""

    from translator.commands.train import train_command

    run_command(
        lambda: train_command(
            config, set_ or [], init_from, run, resume, device, runs_dir, weights_dir
        )
    )


@app.command()
def prepare(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Prepare a config's data once, into a store that every run on that data shares.

    Read, clean, split, train the tokenizers, encode; `train` does this itself when needed. The
    store proves itself whole each time it is opened (sizes and SHA-256 of its files)."""

    from translator.commands.prepare import prepare_command

    run_command(lambda: prepare_command(config, set_ or []))


@app.command()
def validate(
    run: ModelRunOpt = None,
    checkpoint: CheckpointOpt = None,
    beam: BeamOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", help="Write the hypotheses here, one a line.")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML whose data: and decode: sections override."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override data.* or decode.*: section.key=value (repeatable)."),
    ] = None,
    device: DeviceOpt = None,
    runs_dir: RunsDirOpt = Path("runs"),
    weights_dir: WeightsDirOpt = Path("weights"),
    model: ModelDirOpt = None,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Score this test set instead (any format data.source takes): its source side "
            "translated as `translate` would, scored against its target side.",
        ),
    ] = None,
) -> None:
    """Score a checkpoint: loss, BLEU and chrF on its validation split or a test set (--data).

    BLEU and chrF are sacreBLEU's, with their signatures printed."""

    from translator.commands.validate import validate_command

    run_command(
        lambda: validate_command(
            run,
            checkpoint,
            beam,
            output,
            config,
            set_ or [],
            device,
            runs_dir,
            weights_dir,
            model,
            data,
        )
    )


@app.command()
def translate(
    text: Annotated[
        list[str] | None,
        typer.Argument(help="English sentences; with none, each line of stdin is one."),
    ] = None,
    run: ModelRunOpt = None,
    checkpoint: CheckpointOpt = None,
    beam: BeamOpt = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override decode.*: decode.key=value (repeatable)."),
    ] = None,
    attention: Annotated[
        Path | None,
        typer.Option("--attention", help="Save the attention maps to this image, e.g. att.png."),
    ] = None,
    attention_layer: Annotated[
        int | None,
        typer.Option("--attention-layer", help="Layer to draw, from 1 (default: the last)."),
    ] = None,
    attention_self: Annotated[
        bool,
        typer.Option("--attention-self", help="Draw encoder and decoder self-attention too."),
    ] = False,
    input_: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            help="Translate this file, keeping its layout: plain text line by line, or "
            "subtitles (.srt, .vtt) with every number and timing kept.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here (whole, when done) instead of stdout."),
    ] = None,
    format_: Annotated[
        str | None,
        typer.Option("--format", help="text, srt or vtt (default: by the --input extension)."),
    ] = None,
    device: DeviceOpt = None,
    weights_dir: WeightsDirOpt = Path("weights"),
    model: ModelDirOpt = None,
) -> None:
    """Translate English to Italian: the arguments, a file (--input) or stdin, to stdout.

    Each line is cut into its sentences, translated, and put back as it was laid out; a file
    keeps its blank lines, indentation and list markers, a subtitle file every number and
    timing."""

    from translator.commands.translate import translate_command

    run_command(
        lambda: translate_command(
            text or [],
            run,
            checkpoint,
            beam,
            set_ or [],
            attention,
            attention_layer,
            attention_self,
            input_,
            output,
            format_,
            device,
            weights_dir,
            model,
        )
    )


@app.command()
def distill(
    teacher: Annotated[
        str,
        typer.Option(
            "--teacher",
            metavar="RUN|DIR",
            help="The teacher: a run (name or directory), a checkpoint, or an exported model.",
        ),
    ],
    config: ConfigOpt = None,
    set_: SetOpt = None,
    run: RunOpt = None,
    resume: Annotated[
        str | None,
        typer.Option("--resume", metavar="[PATH]", help="Continue the student's training."),
    ] = None,
    device: DeviceOpt = None,
    runs_dir: RunsDirOpt = Path("runs"),
    weights_dir: WeightsDirOpt = Path("weights"),
) -> None:
    """Train a small student on its teacher's translations (e.g. configs/student.yaml).

    The teacher translates the student's data.source (by default its own training data) once,
    through CTranslate2 when installed; the translations are kept and reused. distill.* keys
    choose the decoding, keep_original and the chrF filter."""

    from translator.commands.distill import distill_command

    run_command(
        lambda: distill_command(
            teacher, config, set_ or [], run, resume, device, runs_dir, weights_dir
        )
    )


@app.command()
def average(
    run: Annotated[str, typer.Option("--run", help="The run whose checkpoints to average.")],
    last: Annotated[
        int, typer.Option("--last", help="How many of its newest step_<N>.pt to average.")
    ] = 5,
    output: Annotated[
        Path | None, typer.Option("--output", help="Where to write (default: averaged.pt).")
    ] = None,
    with_parent: Annotated[
        float,
        typer.Option(
            "--with-parent",
            help="For a run made from another (--init-from): move the average this share of the "
            "way back to the weights it started from, e.g. 0.25: less forgetting of the parent's "
            "domain, for a little of the new one (WiSE-FT).",
        ),
    ] = 0.0,
    weights_dir: WeightsDirOpt = Path("weights"),
) -> None:
    """Average the weights of a run's last K checkpoints (kept by train.average_last)."""

    from translator.commands.average import average_command

    run_command(lambda: average_command(run, last, output, weights_dir, with_parent), logs=False)


@app.command()
def export(
    output: Annotated[Path, typer.Option("--output", help="The model directory to create.")],
    run: ModelRunOpt = None,
    checkpoint: CheckpointOpt = None,
    quantization: Annotated[
        str,
        typer.Option("--quantization", help="Weights as float32, int8, int8_float32 or bfloat16."),
    ] = "int8",
    format_: Annotated[
        str,
        typer.Option(
            "--format",
            help="ctranslate2 (for translate/serve --model) or transformers (a Marian "
            "directory for MarianMTModel and pipeline; a run with sentencepiece tokenizers).",
        ),
    ] = "ctranslate2",
    weights_dir: WeightsDirOpt = Path("weights"),
) -> None:
    # The help is rich markup, where "[fast]" would be read as a style tag and vanish: escape it.
    r"""Export a checkpoint to CTranslate2 (".\[fast]"), or to Marian (--format transformers).

    CTranslate2 directories serve `translate/validate/serve --model DIR`; --format transformers
    writes what MarianMTModel and MarianTokenizer load (pip install -e ".\[hf]")."""

    from translator.commands.export import export_in_format

    run_command(
        lambda: export_in_format(format_, run, checkpoint, output, quantization, weights_dir)
    )


@app.command("import")
def import_(
    source: Annotated[
        str,
        typer.Argument(
            help="A Marian model directory as transformers saves it (config.json, weights, "
            "source.spm, target.spm, vocab.json), or a hub name such as "
            "Helsinki-NLP/opus-mt-en-it (needs a network, or the model in the local cache)."
        ),
    ],
    run: Annotated[str, typer.Option("--run", help="Name of the run to create.")],
    target_language: Annotated[
        str | None,
        typer.Option(
            "--target-language",
            help="For a multilingual model: the target-language token to put before each "
            "source, e.g. ita for >>ita<<.",
        ),
    ] = None,
    revision: Annotated[
        str | None, typer.Option("--revision", help="Hub revision (branch, tag or commit).")
    ] = None,
    weights_dir: WeightsDirOpt = Path("weights"),
) -> None:
    r"""Import an OPUS-MT (Marian) model as a run (pip install -e ".\[hf]").

    Then translate, validate, export or serve it as any run, or train from it with --init-from."""

    from translator.commands.import_ import import_command

    run_command(lambda: import_command(source, run, weights_dir, target_language, revision))


@app.command()
def serve(
    run: ModelRunOpt = None,
    checkpoint: CheckpointOpt = None,
    model: ModelDirOpt = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; 0.0.0.0 opens it to other machines.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override decode.* or serve.*: section.key=value."),
    ] = None,
    weights_dir: WeightsDirOpt = Path("weights"),
) -> None:
    """Serve a JSON API and a web page for a run (PyTorch) or an exported --model (CTranslate2)."""

    from translator.commands.serve import serve_command

    run_command(
        lambda: serve_command(run, checkpoint, model, host, port, set_ or [], weights_dir),
        logs=False,
    )


def main() -> None:
    """Console-script entry point; a usage error is one line on stderr and exit code 2."""
    from typer._click.exceptions import NoArgsIsHelpError, UsageError  # typer's bundled click

    if translate_model_fast(sys.argv[1:]):
        sys.exit(0)
    try:
        code = app(bare_resume_means_latest(sys.argv[1:]), standalone_mode=False)
    except NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else "see translator --help", file=sys.stderr)
        sys.exit(2)
    except UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "translator"
        print(f"error: {exc.format_message()} (see {command} --help)", file=sys.stderr)
        sys.exit(2)
    except (typer.Abort, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
