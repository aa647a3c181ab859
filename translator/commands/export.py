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
    weights_root: Path = Path("weights"),
) -> None:
    """`translator export`: the run's checkpoint to CTranslate2, or with --format transformers to
    a Marian directory."""
    import torch

    from translator.errors import ConfigError
    from translator.inference.predict import load_model
    from translator.run.paths import find_checkpoint

    if format_ == "transformers":
        from translator.interop.exporter import export_transformers, import_transformers

        import_transformers()  # fail before loading anything
    elif format_ == "ctranslate2":
        from translator.export.convert import check_exportable, export_model
        from translator.export.engine import import_ctranslate2

        import_ctranslate2()
    else:
        raise ConfigError(f"--format {format_}: choose ctranslate2 or transformers")
    ckpt, run_dir = find_checkpoint(run, checkpoint, weights_root)
    loaded = load_model(ckpt, run_dir, torch.device("cpu"))
    if format_ == "transformers":
        export_transformers(loaded, output)
        what = "transformers Marian"
        use = f'load it with: MarianMTModel.from_pretrained("{output}"), MarianTokenizer likewise'
    else:
        check_exportable(loaded.config.model)
        export_model(loaded, output, quantization)
        what, use = quantization, f'translate with: translator translate --model {output} "Hello"'
    size = sum(p.stat().st_size for p in output.iterdir()) / 2**20
    print(
        f"exported {ckpt} (step {loaded.step:,}) to {output}/ ({what}, {size:.1f} MiB); {use}",
        file=sys.stderr,
    )
