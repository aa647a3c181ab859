"""`translator validate`: a run's checkpoint (PyTorch) or an exported --model (CTranslate2)
scored on its validation split or a test set."""

from __future__ import annotations

from pathlib import Path

from translator.commands import only_model


def validate_command(
    run: str | None,
    checkpoint: Path | None,
    beam: int | None,
    output: Path | None,
    config: Path | None,
    overrides: list[str],
    device: str | None,
    runs_dir: Path,
    weights_dir: Path,
    model: Path | None,
    data: Path | None,
) -> None:
    """`--model DIR` is scored by the export wing, a run by inference."""
    if model is not None:
        from translator.export.validate import validate_model_command

        only_model(run=run, checkpoint=checkpoint, device=device)
        return validate_model_command(model, beam, output, config, overrides, data)
    from translator.inference.evaluate import validate_command as validate_run

    validate_run(
        run, checkpoint, beam, output, config, overrides, device, runs_dir, weights_dir,
        data_file=data,
    )  # fmt: skip
