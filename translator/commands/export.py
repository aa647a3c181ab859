"""`translator export`: a run's checkpoint as a CTranslate2 model directory, or with
--format transformers as a Marian directory for Hugging Face Transformers."""

from __future__ import annotations

import sys
from pathlib import Path


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
        export_transformers_command(run, checkpoint, output, weights_dir)
    elif format_ == "ctranslate2":
        export_command(run, checkpoint, output, quantization, weights_dir)
    else:
        raise ConfigError(f"--format {format_}: choose ctranslate2 or transformers")


def export_command(
    run: str | None,
    checkpoint: Path | None,
    output: Path,
    quantization: str,
    weights_root: Path = Path("weights"),
) -> None:
    """`translator export`: write the run's checkpoint as a CTranslate2 model directory."""
    import torch

    from translator.export.convert import check_exportable, export_model
    from translator.export.engine import import_ctranslate2
    from translator.inference.predict import load_model
    from translator.run.paths import find_checkpoint

    import_ctranslate2()  # fail before loading anything
    ckpt, run_dir = find_checkpoint(run, checkpoint, weights_root)
    loaded = load_model(ckpt, run_dir, torch.device("cpu"))
    check_exportable(loaded.config.model)
    export_model(loaded, output, quantization)
    size = sum(p.stat().st_size for p in output.iterdir()) / 2**20
    print(
        f"exported {ckpt} (step {loaded.step:,}) to {output}/ ({quantization}, {size:.1f} MiB); "
        f'translate with: translator translate --model {output} "Hello"',
        file=sys.stderr,
    )


def export_transformers_command(
    run: str | None,
    checkpoint: Path | None,
    output: Path,
    weights_root: Path = Path("weights"),
) -> None:
    """`translator export --format transformers`: the run as a Marian directory."""
    import torch

    from translator.inference.predict import load_model
    from translator.interop.exporter import export_transformers, import_transformers
    from translator.run.paths import find_checkpoint

    import_transformers()  # fail before loading anything
    ckpt, run_dir = find_checkpoint(run, checkpoint, weights_root)
    loaded = load_model(ckpt, run_dir, torch.device("cpu"))
    export_transformers(loaded, output)
    size = sum(p.stat().st_size for p in output.iterdir()) / 2**20
    print(
        f"exported {ckpt} (step {loaded.step:,}) to {output}/ (transformers Marian, "
        f"{size:.1f} MiB); load it with: "
        f'MarianMTModel.from_pretrained("{output}"), MarianTokenizer likewise',
        file=sys.stderr,
    )
