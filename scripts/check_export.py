"""Does a CTranslate2 export translate like the PyTorch model? Greedy agreement and corpus BLEU.

    python scripts/check_export.py --run cpu --model exports/cpu-f32 --model exports/cpu-int8 \
        --data ../shared/data/en-it/tatoeba-dev.jsonl

Decodes every source line of --data greedily with the run's checkpoint (PyTorch) and with each
--model; prints, per model, the share of lines translated exactly alike and the BLEU of each
against the references, then one JSON line with the figures.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from bench_common import print_figures

from translator.export.engine import load_exported, translate_exported
from translator.inference.predict import load_model, translate_sentences
from translator.metrics import corpus_scores
from translator.run.paths import find_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--model", type=Path, action="append", required=True)
    parser.add_argument("--weights-dir", type=Path, default=Path("weights"))
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args()

    checkpoint, run_dir = find_checkpoint(args.run, None, args.weights_dir)
    loaded = load_model(checkpoint, run_dir, torch.device("cpu"))
    lang_src, lang_tgt = loaded.config.data.lang_src, loaded.config.data.lang_tgt
    rows = [json.loads(line)["translation"] for line in args.data.read_text().splitlines()]
    sources, references = [r[lang_src] for r in rows], [r[lang_tgt] for r in rows]
    with torch.inference_mode():
        reference_out = translate_sentences(loaded, sources, beam=1)
    figures: dict[str, object] = {
        "run": args.run,
        "step": loaded.step,
        "lines": len(sources),
        "bleu_pytorch_greedy": corpus_scores(reference_out, references).bleu,
    }
    for path in args.model:
        exported = load_exported(path)
        out = translate_exported(exported, sources, beam=1)
        same = sum(a == b for a, b in zip(out, reference_out, strict=True)) / len(out)
        name = f"{path.name}_{exported.quantization}"
        figures[f"same_as_pytorch_{name}"] = same
        figures[f"bleu_{name}"] = corpus_scores(out, references).bleu
    print_figures(figures)


if __name__ == "__main__":
    main()
