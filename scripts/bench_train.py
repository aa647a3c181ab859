"""Training throughput benchmark: real tokens/s, padding, FLOPs, MFU and peak memory.

    python scripts/bench_train.py --config configs/base.yaml --steps 10
    python scripts/bench_train.py --config configs/cpu.yaml --set train.precision=bf16
    python scripts/bench_train.py --config configs/cpu.yaml --profile 3

rss_growth_mb is the resident memory gained over the measured steps (after warm-up): run many
steps to see whether memory levels off. With --profile N, N more steps run under torch.profiler:
its table of the operators that took the most time is printed, and the share of time in matrix
multiplication goes into the figures.
Prints a table, then one JSON line with the figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench_common import DEFAULT_DATA, print_figures

from translator.config import ModelConfig, load_config
from translator.data.batching import Batch, collate
from translator.data.prepare import prepare_data
from translator.device import autocast_dtype, resolve_device
from translator.model.transformer import build_model, count_parameters
from translator.run.paths import RunPaths
from translator.training.trainer import Trainer


def step_flops(cfg: ModelConfig, batch: Batch, vocab: int) -> float:
    """Training FLOPs of one batch (forward + backward = 3x forward), from the architecture.

    Counts matrix multiplications on the shapes actually computed (padded B x S and B x T), and
    the output projection on real target tokens only (the model skips padded positions).
    """
    B, S = batch.src.shape
    T = batch.tgt_in.shape[1]
    D, F = cfg.d_model, cfg.d_ff
    enc_per_token = 2 * (4 * D * D + 2 * D * F) + 2 * 2 * S * D  # projections, FFN, QK^T and AV
    dec_per_token = 2 * (4 * D * D + 2 * D * D + 2 * D * F) + 2 * 2 * (T + S) * D
    cross_kv_per_src_token = 2 * 2 * D * D
    forward = (
        cfg.encoder_layers * B * S * enc_per_token
        + cfg.decoder_layers * (B * T * dec_per_token + B * S * cross_kv_per_src_token)
        + 2 * batch.n_tgt_tokens * D * vocab
    )
    return 3.0 * forward


def matmul_peak(dtype: torch.dtype, n: int = 2048, repeats: int = 10) -> float:
    """Best FLOP/s of an n x n matmul in `dtype` on the CPU (this machine's practical peak)."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    for _ in range(3):
        a @ b
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = max(best, 2 * n**3 / (time.perf_counter() - start))
    return best


# Operators that are matrix multiplications (forward and backward): parts of their aten names
# ("mm" also matches addmm and bmm).
MATMUL_OPS = ("mm", "matmul", "linear", "scaled_dot_product")


def profile_steps(trainer: Trainer, groups) -> dict[str, float]:
    """Run `groups` under torch.profiler; print the top operators and return the matmul share."""
    groups = list(groups)
    if not groups:
        return {}
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for group in groups:
            trainer.train_step(group)
    events = prof.key_averages()
    print(events.table(sort_by="self_cpu_time_total", row_limit=15))
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events if any(m in e.key for m in MATMUL_OPS))
    return {"profiled_steps": len(groups), "matmul_time_fraction": matmul / total}


def current_rss_mb() -> float:
    """Resident memory now (Linux), in MiB; NaN where /proc is missing."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except OSError:
        return float("nan")
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--device", default=None)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args()

    config = load_config(args.config, [f"data.source={args.data}", *args.overrides])
    device = resolve_device(args.device)
    torch.manual_seed(config.train.seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        paths = RunPaths.create("bench", Path(tmp) / "runs", Path(tmp) / "weights")
        paths.make()
        data = prepare_data(config, paths)
    prep_s = time.perf_counter() - start
    vocab = data.tgt_tokenizer.get_vocab_size()
    model = build_model(
        config.model,
        data.src_tokenizer.get_vocab_size(),
        vocab,
        shared_vocab=config.tokenizer.shared,
    )
    trainer = Trainer(config, model, data, paths, device)
    batches = trainer.sampler.batches(0)
    accum = config.train.accum_steps
    needed = (args.warmup + args.steps + args.profile) * accum
    if len(batches) < needed:
        sys.exit(f"the corpus gives {len(batches)} batches; fewer than the {needed} needed")

    def groups(offset: int, count: int):
        for s in range(offset, offset + count):
            ids = batches[s * accum : (s + 1) * accum]
            yield [collate([data.train[i] for i in g]) for g in ids]

    compile_start = time.perf_counter()
    for group in groups(0, args.warmup):
        trainer.train_step(group)
    warmup_s = time.perf_counter() - compile_start

    rss_after_warmup = current_rss_mb()
    real_src = real_tgt = padded = 0
    flops = 0.0
    elapsed = 0.0
    for group in groups(args.warmup, args.steps):
        t0 = time.perf_counter()
        trainer.train_step(group)
        elapsed += time.perf_counter() - t0
        for b in group:
            real_src += b.n_src_tokens
            real_tgt += b.n_tgt_tokens
            padded += b.padded_tokens
            flops += step_flops(config.model, b, vocab)

    rss_growth = current_rss_mb() - rss_after_warmup
    profile = profile_steps(trainer, groups(args.warmup + args.steps, args.profile))

    amp = autocast_dtype(config.train.precision, device)
    peak = matmul_peak(amp or torch.float32) if device.type == "cpu" else float("nan")
    achieved = flops / elapsed
    figures = {
        "config": args.config,
        "overrides": args.overrides,
        "device": device.type,
        "precision": "bf16" if amp else "fp32",
        "compile": config.train.compile,
        "threads": torch.get_num_threads(),
        "parameters": count_parameters(model),
        "steps": args.steps,
        "batch_tokens": config.train.batch_tokens,
        "s_per_step": elapsed / args.steps,
        "real_src_tokens_per_s": real_src / elapsed,
        "real_tgt_tokens_per_s": real_tgt / elapsed,
        "pad_fraction": 1 - (real_src + real_tgt) / padded,
        "flops_per_step": flops / args.steps,
        "achieved_gflops": achieved / 1e9,
        "peak_matmul_gflops": peak / 1e9,
        "mfu": achieved / peak,
        "rss_growth_mb": rss_growth,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "data_prep_s": prep_s,
        "warmup_s": warmup_s,
        **profile,
    }
    print_figures(figures)


if __name__ == "__main__":
    main()
