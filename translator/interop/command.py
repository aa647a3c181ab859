"""`translator import` and `translator export --format transformers`: options into calls."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from translator.inference.predict import load_model
from translator.interop.exporter import export_transformers, import_transformers
from translator.interop.importer import import_model
from translator.run.paths import find_checkpoint


def import_command(
    source: str,
    run: str,
    weights_root: Path = Path("weights"),
    target_language: str | None = None,
    revision: str | None = None,
) -> Path:
    """`translator import SOURCE --run NAME`: the model as the run weights_root/NAME."""
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


def export_transformers_command(
    run: str | None,
    checkpoint: Path | None,
    output: Path,
    weights_root: Path = Path("weights"),
) -> None:
    """`translator export --format transformers`: the run as a Marian directory."""
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
