"""Import parity, engines, speed and memory on a base-shape Marian model (6+6 layers, d_model 512,
8 heads, d_ff 2048), made as transformers makes one (tests/interop/marian_models.py: SentencePiece
models trained on 3,000 pairs of the shared corpus, random weights), saved with save_pretrained.

    python scripts/bench_import.py [--sentences 200] [--max-length 64] [--out /tmp/bench_import]

Prints: logits gap, greedy and beam-4 agreement with `generate` (200 dev sentences); CTranslate2
float32 and int8 greedy agreement with transformers; sentences/s of `translate --model` (int8)
against transformers `generate` (fp32), greedy and beam 4, on the same sentences, in this run;
and the peak memory of `translator import` against its weight file. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "interop")]

from marian_models import dev, make_marian  # noqa: E402
from test_import_parity import max_logit_gap  # noqa: E402

from translator.export.convert import export_model  # noqa: E402
from translator.export.engine import load_exported, translate_exported  # noqa: E402
from translator.inference.predict import load_model, translate_sentences  # noqa: E402


def with_decode(cfg, **changes):
    return dataclasses.replace(cfg, decode=dataclasses.replace(cfg.decode, **changes))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--max-length", type=int, default=64, help="generate's max_length (budget)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_import"))
    ap.add_argument(
        "--marian",
        type=Path,
        help="measure this Marian directory (e.g. a trained "
        "run exported with --format transformers) instead of a random base-shape one",
    )
    args = ap.parse_args()
    from transformers import MarianMTModel, MarianTokenizer

    torch.set_num_threads(2)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    marian = args.marian or make_marian(args.out / "marian", d_model=512, layers=6, heads=8,
                                        d_ff=2048, init_std=0.05, eos_bias=4.0)  # fmt: skip
    weights = marian / "model.safetensors"
    print(f"model: {marian} ({weights.stat().st_size / 2**20:.1f} MiB weights)")

    # memory: `translator import` in a process of its own, its peak resident memory (VmHWM: a
    # fresh count after exec, unlike ru_maxrss) against the same libraries loaded and nothing done
    hwm = "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
    load = "import torch, safetensors, sentencepiece, translator.interop.importer; "
    work = (
        "from pathlib import Path; from translator.interop.importer import import_model; "
        f"import_model({str(marian)!r}, 'base', Path({str(args.out / 'weights')!r})); "
    )
    idle, peak = (
        int(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout.split()[-1]
        )
        * 1024  # fmt: skip
        for code in (load + hwm, load + work + hwm)
    )
    size = weights.stat().st_size
    print(f"import peak {peak / 2**20:.0f} MiB; the libraries alone {idle / 2**20:.0f} MiB; "
          f"import's own {(peak - idle) / 2**20:.0f} MiB = {(peak - idle) / size:.2f}x the "
          f"weight file")  # fmt: skip

    run = args.out / "weights" / "base"
    loaded = load_model(run / "latest.pt", run, torch.device("cpu"))
    model = MarianMTModel.from_pretrained(str(marian)).eval()
    tok = MarianTokenizer.from_pretrained(str(marian))
    sentences = [s for s, _ in dev(args.sentences)]
    gen = dict(max_length=args.max_length)
    loaded.config = with_decode(loaded.config, split_sentences=False,
                                max_len_a=0.0, max_len_b=args.max_length - 1)  # fmt: skip

    def hf(beam: int) -> tuple[list[str], float]:
        start, out = time.perf_counter(), []
        for i in range(0, len(sentences), 32):
            batch = tok(sentences[i : i + 32], return_tensors="pt", padding=True)
            with torch.no_grad():
                ids = model.generate(**batch, num_beams=beam, **gen)
            out += tok.batch_decode(ids, skip_special_tokens=True)
        return out, time.perf_counter() - start

    gap = max_logit_gap(loaded, marian, dev(args.sentences))
    print(f"logits (teacher-forced on the references): largest difference {gap:.2e}")

    results = {}
    for beam in (1, 4):
        theirs, t_hf = hf(beam)
        loaded.config = with_decode(loaded.config, beam=beam)
        start = time.perf_counter()
        ours = translate_sentences(loaded, sentences, beam=beam)
        t_pt = time.perf_counter() - start
        same = sum(a == b for a, b in zip(ours, theirs, strict=True))
        results[beam] = (theirs, t_hf)
        print(f"beam {beam}: PyTorch import = transformers on {same}/{len(sentences)}; "
              f"transformers {len(sentences) / t_hf:.2f} sent/s, PyTorch here "
              f"{len(sentences) / t_pt:.2f} sent/s")  # fmt: skip

    for quantization in ("float32", "int8"):
        out = args.out / f"ct2-{quantization}"
        export_model(loaded, out, quantization)
        engine = load_exported(out, threads=2)
        engine.config = with_decode(loaded.config, beam=1)
        ours = translate_exported(engine, sentences, beam=1)
        same = sum(a == b for a, b in zip(ours, results[1][0], strict=True))
        print(f"CTranslate2 {quantization} greedy = transformers greedy on {same}/{len(sentences)}")
        if quantization == "int8":
            for beam in (1, 4):
                engine.config = with_decode(loaded.config, beam=beam)
                start = time.perf_counter()
                translate_exported(engine, sentences, beam=beam)
                t = time.perf_counter() - start
                t_hf = results[beam][1]
                print(f"speed beam {beam}: CTranslate2 int8 {len(sentences) / t:.2f} sent/s, "
                      f"transformers fp32 {len(sentences) / t_hf:.2f} sent/s: "
                      f"{t_hf / t:.2f}x")  # fmt: skip
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
    print(f"peak RSS of this script {rss:.0f} MiB")


if __name__ == "__main__":
    main()
