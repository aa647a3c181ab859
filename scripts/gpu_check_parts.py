"""The parts of scripts/gpu_check.py that run inside their own process: the environment, the
matmul peak, and decoding the dev set with PyTorch and with CTranslate2. Each prints one JSON line.

    python scripts/gpu_check_parts.py NAME '{"keyword": "argument", ...}'
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

OPTIONAL = ("ctranslate2", "datasets", "fastapi", "hypothesis", "tensorboard", "matplotlib")


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def run_env(device: str) -> dict[str, Any]:
    import importlib.metadata
    import importlib.util

    import torch

    found = {}
    for name in OPTIONAL:
        try:
            found[name] = (
                importlib.metadata.version(name) if importlib.util.find_spec(name) else None
            )
        except importlib.metadata.PackageNotFoundError:
            found[name] = "?"
    env = {"python": platform.python_version(), "torch": torch.__version__, "packages": found}
    env["cuda_available"] = torch.cuda.is_available()
    if device == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env |= {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1)}
        env |= {"capability": list(torch.cuda.get_device_capability(0))}
        env |= {"cuda": torch.version.cuda, "bf16": torch.cuda.is_bf16_supported()}
    else:
        env |= {
            "cpu": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(),
        }
    return env


def run_peak(device: str, dtype: str, n: int, repeats: int = 20, per_timing: int = 5) -> dict:
    """The best rate of an n x n @ n x n matmul: `per_timing` back to back, synchronised."""
    import torch

    torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32
    a = torch.randn(n, n, device=device, dtype=torch_dtype)
    b = torch.randn(n, n, device=device, dtype=torch_dtype)
    for _ in range(3):
        a @ b
    best = 0.0
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        for _ in range(per_timing):
            a @ b
        sync(device)
        best = max(best, per_timing * 2 * n**3 / (time.perf_counter() - start))
    return {"matmul_n": n, "dtype": dtype, "peak_tflops": best / 1e12}


def read_dev(path: Path) -> tuple[list[str], list[str]]:
    pairs = [json.loads(line)["translation"] for line in path.read_text("utf-8").splitlines()]
    return [p["en"] for p in pairs], [p["it"] for p in pairs]


def timed_decodes(decode, detokenize, references: list[str], n: int, device: str) -> dict:
    """Greedy and beam 4 through `decode(beam)`: sentences/s and BLEU/chrF of each."""
    from translator.metrics import corpus_scores

    figures: dict[str, Any] = {}
    for label, beam in (("greedy", 1), ("beam4", 4)):
        sync(device)
        start = time.perf_counter()
        outputs = decode(beam)
        sync(device)
        seconds = time.perf_counter() - start
        scores = corpus_scores([detokenize(o) for o in outputs], references)
        figures |= {f"{label}_sentences_per_s": n / seconds, f"{label}_s": seconds}
        figures |= {f"{label}_bleu": scores.bleu, f"{label}_chrf": scores.chrf}
    figures["bleu_signature"] = scores.bleu_signature
    return figures


def run_decode(weights: str, run: str, dev: str, device: str, **_: Any) -> dict[str, Any]:
    """PyTorch on the device: greedy and beam 4, fp32 and under bf16 autocast."""
    from functools import partial

    import torch

    from translator.data.tokenizer import decode_ids
    from translator.inference.predict import decode_in_batches, encode_sources, load_model
    from translator.run.paths import find_checkpoint

    checkpoint, run_dir = find_checkpoint(run, None, Path(weights))
    loaded = load_model(checkpoint, run_dir, torch.device(device))
    english, italian = read_dev(Path(dev))
    sources = encode_sources(loaded.src_tokenizer, english, loaded.max_source_tokens)
    cfg = dataclasses.replace(loaded.config.decode, mbr=False)
    detokenize = partial(decode_ids, loaded.tgt_tokenizer)

    def decode(beam: int) -> list[list[int]]:
        return decode_in_batches(loaded.model, sources, cfg, loaded.device, beam)

    figures: dict[str, Any] = {"checkpoint": str(checkpoint.name), "step": loaded.step}
    figures |= {"sentences": len(sources), "batch_size": cfg.batch_size, "alpha": cfg.alpha}
    with torch.inference_mode():
        decode_in_batches(loaded.model, sources[:64], cfg, loaded.device, 4)  # warm-up
        fp32 = timed_decodes(decode, detokenize, italian, len(sources), device)
        with torch.autocast(device, dtype=torch.bfloat16):
            bf16 = timed_decodes(decode, detokenize, italian, len(sources), device)
    return (
        figures
        | {f"fp32_{k}": v for k, v in fp32.items()}
        | {f"bf16_{k}": v for k, v in bf16.items() if k != "bleu_signature"}
    )


def run_decode_ct2(weights: str, run: str, dev: str, device: str, export: str) -> dict:
    """The same model exported to CTranslate2 (float32 weights), decoded on the device."""
    from functools import partial

    import torch

    from translator.data.tokenizer import decode_ids
    from translator.export.convert import export_model
    from translator.export.engine import decode_exported, import_ctranslate2, load_exported
    from translator.inference.predict import encode_sources, load_model
    from translator.run.paths import find_checkpoint

    ct2 = import_ctranslate2()
    checkpoint, run_dir = find_checkpoint(run, None, Path(weights))
    export_model(load_model(checkpoint, run_dir, torch.device("cpu")), Path(export), "float32")
    model = load_exported(Path(export))
    compute_type = "bfloat16" if device == "cuda" else "float32"
    if device == "cuda":  # load_exported takes the CPU; the GPU is this script's business
        model.translator = ct2.Translator(export, device="cuda", compute_type=compute_type)
    model.config = dataclasses.replace(
        model.config, decode=dataclasses.replace(model.config.decode, mbr=False)
    )
    english, italian = read_dev(Path(dev))
    sources = encode_sources(model.src_tokenizer, english, model.max_source_tokens)
    decode_exported(model, sources[:64], 4)  # warm-up
    figures = timed_decodes(
        partial(decode_exported, model, sources),
        partial(decode_ids, model.tgt_tokenizer),
        italian,
        len(sources),
        "cpu",  # CTranslate2 returns finished results: nothing to synchronise
    )
    return {"ctranslate2": ct2.__version__, "compute_type": compute_type, **figures}


PARTS = {"env": run_env, "peak": run_peak, "decode": run_decode, "decode_ct2": run_decode_ct2}


def main() -> None:
    name, kwargs = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(PARTS[name](**kwargs)), flush=True)


if __name__ == "__main__":
    main()
