"""`translator import`: an OPUS-MT (Marian) model of Hugging Face Transformers as a run."""

from __future__ import annotations

import sys
from pathlib import Path


def import_command(
    source: str,
    run: str,
    weights_root: Path = Path("weights"),
    target_language: str | None = None,
    revision: str | None = None,
) -> Path:
    """`translator import SOURCE --run NAME`: the model as the run weights_root/NAME."""
    import torch

    from translator.inference.predict import load_model
    from translator.interop.importer import import_model

    run_dir = import_model(source, run, weights_root, target_language, revision)
    loaded = load_model(run_dir / "latest.pt", run_dir, torch.device("cpu"))
    params = sum(p.numel() for p in loaded.model.parameters())
    m, d = loaded.config.model, loaded.config.decode
    print(
        f"imported {source} as run {run} ({run_dir}/): {params / 1e6:.1f}M weights, d_model "
        f"{m.d_model}, {m.encoder_layers}+{m.decoder_layers} layers, vocabulary "
        f"{loaded.src_tokenizer.get_vocab_size():,}; decoding: beam {d.beam}, length penalty "
        f'{d.alpha}\ntranslate with: translator translate --run {run} "Hello"',
        file=sys.stderr,
    )
    return run_dir
