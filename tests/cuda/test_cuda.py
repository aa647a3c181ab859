"""The CUDA path against the CPU and reference paths: attention with padding, the key/value cache,
bf16 training, exact resume, greedy decoding of a trained model, the device choice.

Every test is marked `cuda` and skips without a CUDA GPU (conftest.py); scripts/gpu_check.sh
runs them on one. The model-level cases reuse the CPU tests' helpers (tests/model/test_model.py).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from helpers import ROOT, make_pairs, train_tiny

from translator.device import autocast_dtype, resolve_device
from translator.inference.decode import greedy_decode
from translator.inference.predict import decode_in_batches, encode_sources, load_model
from translator.specials import PAD_ID
from translator.training.train import train_command
from translator.training.trainer import Trainer

pytestmark = pytest.mark.cuda

CUDA = torch.device("cuda")
TINY = ROOT / "configs" / "tiny.yaml"
ATOL = 1e-4
"""fp32 on the GPU against fp32 on the CPU or the manual reference: other kernels, other sums."""
BF16_TOLERANCE = 0.03
"""bf16 against fp32: within 3% (of the largest value, or of each step's loss)."""


def wing_tests(path: str) -> ModuleType:
    """Another wing's test module (tests/PATH), loaded under its own name for its helpers."""
    name = "cuda_helpers_" + path.removesuffix(".py").replace("/", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / path)
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


mt = wing_tests("model/test_model.py")


# --------------------------------------------------------------------------- device choice


def test_device_choice_picks_cuda(corpus: Path) -> None:
    assert resolve_device(None).type == "cuda"
    assert resolve_device("cuda").type == "cuda"
    expected = torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    assert autocast_dtype("auto", CUDA) is expected
    assert autocast_dtype("fp32", CUDA) is None
    # `translator train` without --device trains there, in bf16 with precision auto
    trainer = train_on(None, corpus, "auto", "train.max_steps=3", "train.precision=auto")
    assert trainer.device.type == "cuda" and next(trainer.model.parameters()).is_cuda
    assert trainer.amp_dtype is expected and len(trainer.losses) == 3


# --------------------------------------------------------------------------- attention


@pytest.mark.parametrize("keep_weights", [False, True], ids=["sdpa", "recorded"])
def test_attention_with_padding_equals_the_reference(keep_weights: bool) -> None:
    mha, x, memory, key_ok = mt.attention_case()
    keep = key_ok[:, None, :].expand(3, 5, 7)  # (B, Lq, Lk)
    causal = torch.ones(5, 5, dtype=torch.bool).tril().expand(3, 5, 5)
    with torch.no_grad():
        cross_cpu, _ = mt.manual_attention(mha, x, memory, keep)
        self_cpu, _ = mt.manual_attention(mha, x, x, causal)
        mha.to(CUDA).keep_weights = keep_weights
        x, memory, key_ok = x.to(CUDA), memory.to(CUDA), key_ok.to(CUDA)
        cross = mha(x, memory, mask=key_ok[:, None, None, :])
        recorded = mha.weights  # (B, H, Lq, Lk) with keep_weights, else None
        cross_ref, weights = mt.manual_attention(mha, x, memory, keep.to(CUDA))
        self_attn = mha(x, is_causal=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            cross_bf16 = mha(x, memory, mask=key_ok[:, None, None, :])
    assert cross.device.type == "cuda"
    torch.testing.assert_close(cross, cross_ref, atol=ATOL, rtol=0)
    torch.testing.assert_close(cross.cpu(), cross_cpu, atol=ATOL, rtol=0)
    torch.testing.assert_close(self_attn.cpu(), self_cpu, atol=ATOL, rtol=0)
    if keep_weights:
        torch.testing.assert_close(recorded, weights, atol=ATOL, rtol=0)
        assert (recorded.masked_select(~keep[:, None].to(CUDA).expand_as(weights)) == 0).all()
    scale = float(cross_cpu.abs().max())
    torch.testing.assert_close(
        cross_bf16.float().cpu(), cross_cpu, atol=BF16_TOLERANCE * scale, rtol=0
    )


@pytest.mark.parametrize("options", [{}, {"norm": "post", "positions": "learned"}])
def test_source_padding_changes_nothing(options: dict) -> None:
    model = mt.make_model(**options)
    src, tgt = mt.make_src([5, 2, 7]), mt.make_tgt(3, 6)
    with torch.no_grad():
        on_cpu = model(src, tgt)
        model.to(CUDA)
        src, tgt = src.to(CUDA), tgt.to(CUDA)
        base = model(src, tgt)
        padded = model(F.pad(src, (0, 4), value=PAD_ID), tgt)
        alone = [model(src[i : i + 1, : n + 2], tgt[i : i + 1])[0] for i, n in enumerate([5, 2, 7])]
    torch.testing.assert_close(base.cpu(), on_cpu, atol=ATOL, rtol=0)
    torch.testing.assert_close(padded, base, atol=ATOL, rtol=0)
    torch.testing.assert_close(torch.stack(alone), base, atol=ATOL, rtol=0)


# --------------------------------------------------------------------------- the cache


@pytest.mark.parametrize("options", mt.OPTIONS, ids=mt.OPTION_IDS)
def test_cached_decoding_equals_recomputation(options: dict) -> None:
    model = mt.make_model(**options).to(CUDA)
    src, tgt = mt.make_src([5, 2, 8]).to(CUDA), mt.make_tgt(3, 9).to(CUDA)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)  # (B, T, D)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache) for t in range(9)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=ATOL, rtol=0)
    assert cache[0]["self"]["k"].shape == (3, 2, 9, 16) and cache[0]["self"]["k"].is_cuda


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_with_cache_equals_without(seed: int) -> None:
    model = mt.make_model(seed=seed, positions="learned" if seed == 2 else "sinusoidal")
    src = mt.make_src([6, 1, 9, 4, 3, 7], seed=seed)
    on_cpu = greedy_decode(model, src)
    model.to(CUDA)
    fast = greedy_decode(model, src.to(CUDA), use_cache=True)
    slow = greedy_decode(model, src.to(CUDA), use_cache=False)
    assert fast == slow == on_cpu
    assert any(fast)  # not a vacuous comparison of empty outputs


# --------------------------------------------------------------------------- training


def train_on(
    device: str | None, corpus: Path, name: str, *extra: str, resume: str | None = None
) -> Trainer:
    """configs/tiny.yaml on the toy corpus, trained in this process on `device`."""
    overrides = [
        f"data.source={corpus}",
        "train.eval_every=0",
        "train.checkpoint_every=1000",
        "train.epochs=100",
        *extra,
    ]
    return train_command(TINY, overrides, name, resume, device)


def test_bf16_loss_tracks_fp32(corpus: Path) -> None:
    """On the GPU, fp32 training follows the CPU's step by step, and bf16 autocast tracks fp32."""
    common = ("train.max_steps=30", "model.dropout=0.0")  # no dropout: CPU and GPU draw apart
    cpu = train_on("cpu", corpus, "cpu", *common, "train.precision=fp32")
    fp32 = train_on("cuda", corpus, "fp32", *common, "train.precision=fp32")
    bf16 = train_on("cuda", corpus, "bf16", *common, "train.precision=bf16")
    assert fp32.device.type == bf16.device.type == "cuda"
    assert fp32.amp_dtype is None and bf16.amp_dtype is torch.bfloat16
    assert len(cpu.losses) == len(fp32.losses) == len(bf16.losses) == 30
    for step, (c, a, b) in enumerate(zip(cpu.losses, fp32.losses, bf16.losses, strict=True), 1):
        assert abs(a - c) <= 0.01 * c, ("fp32: cuda vs cpu", step, a, c)
        assert math.isfinite(b) and abs(b - a) <= BF16_TOLERANCE * a, ("bf16 vs fp32", step, b, a)
    assert bf16.losses[-1] < 0.8 * bf16.losses[0]  # and it learns
    # the end-of-training evaluation (loss, greedy BLEU, samples) ran on the GPU under autocast
    assert bf16.progress.best_valid_loss == pytest.approx(fp32.progress.best_valid_loss, rel=0.03)


@contextmanager
def deterministic() -> Iterator[None]:
    """Deterministic kernels where torch has them (warning where it has none)."""
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before)


def test_resume_mid_epoch_equals_uninterrupted_run(corpus: Path) -> None:
    """As tests/training/test_train.py on the CPU: the checkpoint (weights, Adam, the CPU and
    CUDA random states: dropout is on) is loaded onto the GPU, and the losses are the same."""
    extra = ("train.batch_tokens=256", "train.accum_steps=2")
    with deterministic():
        straight = train_on("cuda", corpus, "straight", "train.max_steps=24", *extra)
        first = train_on("cuda", corpus, "split", "train.max_steps=11", *extra)
        second = train_on("cuda", corpus, "split", "train.max_steps=24", resume="latest")
    assert first.progress.batch_in_epoch != 0  # the stop fell mid-epoch
    assert second.progress.step == 24
    assert first.losses + second.losses == straight.losses
    for (name, p), q in zip(
        straight.model.named_parameters(), second.model.parameters(), strict=True
    ):
        assert p.is_cuda and torch.equal(p, q), name


# --------------------------------------------------------------------------- decoding


def test_greedy_of_a_trained_model_is_the_same_on_cuda_as_on_cpu(tmp_path: Path) -> None:
    run_dir = train_tiny(tmp_path)
    english = [en for en, _ in make_pairs(300, seed=7)]
    outputs = {}
    for device in ("cpu", "cuda"):
        loaded = load_model(run_dir / "latest.pt", run_dir, torch.device(device))
        sources = encode_sources(loaded.src_tokenizer, english, loaded.max_source_tokens)
        with torch.inference_mode():
            outputs[device] = decode_in_batches(
                loaded.model, sources, loaded.config.decode, loaded.device, beam=1
            )
    assert next(loaded.model.parameters()).is_cuda
    pairs = zip(outputs["cpu"], outputs["cuda"], strict=True)
    differ = [i for i, (a, b) in enumerate(pairs) if a != b]
    assert not differ, [(english[i], outputs["cpu"][i], outputs["cuda"][i]) for i in differ[:5]]
    assert sum(map(len, outputs["cpu"])) > len(english)  # not a comparison of empty outputs
