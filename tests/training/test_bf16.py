"""The bf16 autocast path that configs/cpu.yaml takes on CPUs with bf16 instructions: training
tracks fp32, greedy decoding under autocast, and the fp32 attention inside bf16."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from helpers import ROOT

from translator.data.batching import collate
from translator.device import cpu_has_native_bf16
from translator.inference.decode import greedy_decode
from translator.model.transformer import MultiHeadAttention
from translator.training.train import train_command
from translator.training.trainer import Trainer

pytestmark = pytest.mark.skipif(
    not cpu_has_native_bf16(),
    reason="this CPU has no bf16 instructions (avx512_bf16 / amx_bf16): precision auto keeps "
    "fp32 here, and emulated bf16 is too slow to test",
)

TINY = ROOT / "configs" / "tiny.yaml"
STEPS = 30
LOSS_TOLERANCE = 0.03
"""bf16 training losses stay within 3% of fp32's, step by step (measured: under 1%)."""


def train(corpus: Path, precision: str) -> Trainer:
    overrides = [
        f"data.source={corpus}",
        f"train.precision={precision}",
        f"train.max_steps={STEPS}",
        "train.epochs=100",
        "model.dropout=0.0",
        "train.eval_every=0",
        "train.n_samples=2",
    ]
    return train_command(TINY, overrides, f"run-{precision}", None, "cpu")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Trainer]:
    """The same seeded run in fp32 and in bf16 (module-wide: two trainings, used thrice)."""
    from helpers import make_pairs, write_jsonl

    root = tmp_path_factory.mktemp("bf16")
    corpus = write_jsonl(root / "corpus.jsonl", make_pairs(600))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        return {p: train(corpus, p) for p in ("fp32", "bf16")}


def test_bf16_training_loss_tracks_fp32(runs: dict[str, Trainer]) -> None:
    fp32, bf16 = runs["fp32"], runs["bf16"]
    assert fp32.amp_dtype is None and bf16.amp_dtype is torch.bfloat16
    assert len(fp32.losses) == len(bf16.losses) == STEPS
    for step, (a, b) in enumerate(zip(fp32.losses, bf16.losses, strict=True), start=1):
        assert math.isfinite(b) and abs(a - b) <= LOSS_TOLERANCE * a, (step, a, b)
    assert bf16.losses[-1] < 0.8 * bf16.losses[0]  # and it learns
    # the end-of-training evaluation ran under autocast too
    assert bf16.progress.best_valid_loss == pytest.approx(fp32.progress.best_valid_loss, rel=0.03)


def test_greedy_under_autocast_follows_fp32_where_fp32_is_sure(runs: dict[str, Trainer]) -> None:
    """Token by token, bf16 greedy output equals fp32's up to the first step where fp32's top two
    logits are within 0.1 of each other (there rounding may pick either)."""
    trainer = runs["bf16"]
    model = trainer.model.eval()
    src = collate([trainer.data.valid[i] for i in range(48)]).src
    with torch.no_grad():
        exact = greedy_decode(model, src, 1.5, 5)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            rounded = greedy_decode(model, src, 1.5, 5)
    compared = 0
    for i, (a, b) in enumerate(zip(exact, rounded, strict=True)):
        tgt_in = torch.tensor([[2, *a]])  # [SOS] then fp32's output
        with torch.no_grad():
            logits = model(src[i : i + 1], tgt_in)[0]  # (T, V)
        top2 = logits.topk(2, dim=-1).values
        sure = 0
        while sure < len(a) and float(top2[sure, 0] - top2[sure, 1]) > 0.1:
            sure += 1
        assert b[:sure] == a[:sure], (i, a, b)
        compared += sure
    assert compared >= 40, compared  # the check was not vacuous


def test_fp32_attention_inside_bf16_matches_the_bf16_kernel_and_the_exact_value() -> None:
    torch.manual_seed(0)
    attn = MultiHeadAttention(d_model=16, n_heads=2, dropout=0.0)
    q, k, v = (torch.randn(2, 2, 6, 8).bfloat16().requires_grad_() for _ in range(3))
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, ..., 4:] = False  # the second sequence has two padding keys
    for causal, m in ((False, mask), (True, None)):
        out = attn._attend(q, k, v, m, causal)  # the fp32 branch: CPU and bf16 inputs
        reference = F.scaled_dot_product_attention(q, k, v, m, 0.0, causal)  # bf16 kernel
        exact = F.scaled_dot_product_attention(
            *(t.detach().double() for t in (q, k, v)), m, 0.0, causal
        )
        assert out.dtype == torch.bfloat16
        torch.testing.assert_close(out.float(), reference.float(), atol=2e-2, rtol=0)
        error, reference_error = (
            float((x.detach().double() - exact).abs().max()) for x in (out, reference)
        )
        assert error <= reference_error + 1e-3  # fp32 inside is no less exact than bf16
        grads = torch.autograd.grad(out.float().square().sum(), (q, k, v))
        expected = torch.autograd.grad(reference.float().square().sum(), (q, k, v))
        for g, e in zip(grads, expected, strict=True):
            torch.testing.assert_close(g.float(), e.float(), atol=5e-2, rtol=5e-2)
