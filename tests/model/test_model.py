"""Model: shapes, causality, padding invariance, every option, cache == recomputation, greedy
search, and attention equal to a manual reference and to `nn.MultiheadAttention`."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from translator.config import ModelConfig
from translator.inference.decode import greedy_decode, max_output_lengths
from translator.model.transformer import (
    MultiHeadAttention,
    Transformer,
    build_model,
    count_parameters,
    padding_mask,
    record_attention,
)
from translator.specials import EOS_ID, PAD_ID, SOS_ID

V_SRC, V_TGT = 23, 19
ATOL = 1e-5

OPTIONS = [
    {},
    {"norm": "post"},
    {"activation": "gelu"},
    {"positions": "learned"},
    {"tie_embeddings": True},
    {"attention_dropout": 0.1},
    {"norm": "post", "activation": "gelu", "positions": "learned", "tie_embeddings": True},
]
OPTION_IDS = ["default", "post", "gelu", "learned", "tied", "attn_dropout", "all"]


def tiny_cfg(**overrides) -> ModelConfig:
    base = {
        "d_model": 32,
        "n_heads": 2,
        "encoder_layers": 2,
        "decoder_layers": 2,
        "d_ff": 64,
        "dropout": 0.1,
        "max_positions": 64,
    }
    return ModelConfig(**{**base, **overrides})


def make_model(seed: int = 0, **overrides) -> Transformer:
    """A seeded tiny model in eval mode."""
    torch.manual_seed(seed)
    model = build_model(tiny_cfg(**overrides), V_SRC, V_TGT)
    if overrides.get("positions") == "learned":
        with torch.no_grad():  # learned tables start near zero; make positions matter in tests
            model.src_embed.positions.normal_()
            model.tgt_embed.positions.normal_()
    return model.eval()


def make_src(lengths: list[int], seed: int = 0) -> torch.Tensor:
    """(B, S) sources [SOS] w1..wn [EOS] with n = lengths[i], padded with PAD."""
    g = torch.Generator().manual_seed(seed)
    S = max(lengths) + 2
    src = torch.full((len(lengths), S), PAD_ID, dtype=torch.long)
    for row, n in enumerate(lengths):
        words = torch.randint(4, V_SRC, (n,), generator=g)
        src[row, : n + 2] = torch.cat([torch.tensor([SOS_ID]), words, torch.tensor([EOS_ID])])
    return src


def make_tgt(B: int, T: int, seed: int = 1) -> torch.Tensor:
    """(B, T) decoder inputs starting with [SOS], no padding."""
    g = torch.Generator().manual_seed(seed)
    tgt = torch.randint(4, V_TGT, (B, T), generator=g)
    tgt[:, 0] = SOS_ID
    return tgt


# --------------------------------------------------------------------------- shapes, options


def test_forward_shapes_and_select() -> None:
    model = make_model()
    src, tgt_in = make_src([3, 7, 5]), make_tgt(3, 6)
    logits = model(src, tgt_in)
    assert logits.shape == (3, 6, V_TGT)
    select = torch.zeros(3, 6, dtype=torch.bool)
    select[0, :2] = select[1, :] = select[2, 4] = True
    chosen = model(src, tgt_in, select=select)
    assert chosen.shape == (int(select.sum()), V_TGT)
    torch.testing.assert_close(chosen, logits[select], atol=ATOL, rtol=0)
    memory, src_mask = model.encode(src)
    assert memory.shape == (3, src.size(1), 32)
    assert src_mask.shape == (3, 1, 1, src.size(1))
    assert model.decode(tgt_in, memory, src_mask).shape == (3, 6, 32)


def test_padding_mask_is_true_at_real_tokens() -> None:
    src = make_src([1, 3])
    mask = padding_mask(src)
    assert mask.dtype == torch.bool and mask.shape == (2, 1, 1, 5)
    assert mask[:, 0, 0].tolist() == [[True, True, True, False, False], [True] * 5]


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_every_option_trains_one_step(options: dict) -> None:
    model = make_model(**options).train()
    src, tgt = make_src([4, 2, 6]), make_tgt(3, 7)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    logits = model(src, tgt_in)
    assert torch.isfinite(logits).all()
    loss = F.cross_entropy(logits.reshape(-1, V_TGT), tgt_out.reshape(-1), ignore_index=PAD_ID)
    loss.backward()
    assert torch.isfinite(loss)
    for name, param in model.named_parameters():
        assert param.grad is not None, name
        assert torch.isfinite(param.grad).all(), name
    # Gradients reach the bottom of both stacks.
    assert model.src_embed.tokens.weight.grad.abs().sum() > 0
    assert model.tgt_embed.tokens.weight.grad.abs().sum() > 0
    if options.get("positions") == "learned":
        assert model.src_embed.positions.grad.abs().sum() > 0
    else:
        assert "positions" not in dict(model.named_parameters())


def test_post_norm_has_no_final_norm_and_pre_norm_has_one() -> None:
    assert isinstance(make_model(norm="pre").encoder_norm, nn.LayerNorm)
    assert isinstance(make_model(norm="post").decoder_norm, nn.Identity)
    assert make_model(activation="gelu").encoder_layers[0].ffn.activation is F.gelu


def test_tied_embeddings_share_one_matrix() -> None:
    untied, tied = make_model(), make_model(tie_embeddings=True)
    assert tied.output.weight is tied.tgt_embed.tokens.weight
    assert untied.output.weight is not untied.tgt_embed.tokens.weight
    assert count_parameters(untied) - count_parameters(tied) == V_TGT * 32
    # Training the output layer moves the embedding too: one tensor, not a copy.
    with torch.no_grad():
        tied.output.weight[5].add_(1.0)
    torch.testing.assert_close(tied.tgt_embed.tokens.weight[5], tied.output.weight[5])


def test_positions_beyond_the_table_fail_clearly() -> None:
    model = make_model(max_positions=8)
    with pytest.raises(ValueError, match="max_positions 8"):
        model(make_src([3]), make_tgt(1, 9))


# --------------------------------------------------------------------------- invariances


@pytest.mark.parametrize("manual", [False, True], ids=["sdpa", "manual"])
@pytest.mark.parametrize("options", [{}, {"norm": "post", "positions": "learned"}])
def test_causality(options: dict, manual: bool) -> None:
    model = make_model(**options)
    src, tgt = make_src([5, 3]), make_tgt(2, 8)
    with record_attention(model) if manual else torch.no_grad():
        base = model(src, tgt)
        for t in range(tgt.size(1) - 1):
            changed = tgt.clone()
            changed[:, t + 1 :] = (changed[:, t + 1 :] + 1 - 4) % (V_TGT - 4) + 4
            assert not torch.equal(changed, tgt)
            logits = model(src, changed)
            torch.testing.assert_close(logits[:, : t + 1], base[:, : t + 1], atol=ATOL, rtol=0)
            assert not torch.allclose(logits[:, t + 1 :], base[:, t + 1 :], atol=ATOL)


@pytest.mark.parametrize("options", OPTIONS[:2] + OPTIONS[3:4], ids=["default", "post", "learned"])
def test_source_padding_invariance(options: dict) -> None:
    model = make_model(**options)
    src, tgt = make_src([5, 2, 7]), make_tgt(3, 6)
    base = model(src, tgt)
    padded = F.pad(src, (0, 4), value=PAD_ID)
    torch.testing.assert_close(model(padded, tgt), base, atol=ATOL, rtol=0)
    # Each row of a padded batch gives what the row gives alone, unpadded.
    for row, n in enumerate([5, 2, 7]):
        alone = model(src[row : row + 1, : n + 2], tgt[row : row + 1])
        torch.testing.assert_close(alone[0], base[row], atol=ATOL, rtol=0)
    # ... and the source does matter: a different real token changes the logits.
    other = src.clone()
    other[:, 1] = (other[:, 1] - 4 + 1) % (V_SRC - 4) + 4
    assert not torch.allclose(model(other, tgt), base, atol=ATOL)


def test_target_padding_leaves_earlier_logits_unchanged() -> None:
    model = make_model()
    src, tgt = make_src([4, 6]), make_tgt(2, 5)
    base = model(src, tgt)
    padded = F.pad(tgt, (0, 3), value=PAD_ID)
    logits = model(src, padded)
    assert logits.shape == (2, 8, V_TGT)
    torch.testing.assert_close(logits[:, :5], base, atol=ATOL, rtol=0)


def test_eval_is_deterministic_and_train_mode_uses_dropout() -> None:
    model = make_model()
    src, tgt = make_src([4, 6]), make_tgt(2, 5)
    torch.testing.assert_close(model(src, tgt), model(src, tgt), atol=0, rtol=0)
    model.train()
    assert not torch.allclose(model(src, tgt), model(src, tgt))


# --------------------------------------------------------------------------- cache, greedy


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_cached_decoding_equals_recomputation(options: dict) -> None:
    model = make_model(**options)
    src, tgt = make_src([5, 2, 8]), make_tgt(3, 9)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)  # (B, T, D)
        cache = model.new_cache()
        steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache) for t in range(9)]
    stepped = torch.cat(steps, dim=1)
    torch.testing.assert_close(stepped, full, atol=ATOL, rtol=0)
    assert cache[0]["self"]["k"].shape == (3, 2, 9, 16)  # (B, H, T, Dh)
    assert cache[-1]["cross"]["k"].shape == (3, 2, src.size(1), 16)  # (B, H, S, Dh)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_with_cache_equals_without(seed: int) -> None:
    model = make_model(seed=seed, positions="learned" if seed == 2 else "sinusoidal")
    src = make_src([6, 1, 9, 4, 3, 7], seed=seed)
    fast = greedy_decode(model, src, use_cache=True)
    slow = greedy_decode(model, src, use_cache=False)
    assert fast == slow
    assert any(fast)  # not a vacuous comparison of empty outputs
    assert all(EOS_ID not in out for out in fast)  # [EOS] ends an output; it is not part of it


def test_batched_greedy_equals_one_by_one() -> None:
    model = make_model(seed=3)
    lengths = [6, 1, 9, 4, 3, 7]
    src = make_src(lengths, seed=4)
    batched = greedy_decode(model, src)
    alone = [greedy_decode(model, src[i : i + 1, : n + 2])[0] for i, n in enumerate(lengths)]
    assert batched == alone


def test_greedy_follows_the_argmax_of_teacher_forced_logits() -> None:
    model = make_model(seed=5)
    src = make_src([4, 6], seed=5)
    outputs = greedy_decode(model, src)
    for row, out in enumerate(outputs):
        tgt_in = torch.tensor([[SOS_ID, *out]])
        with torch.no_grad():
            argmax = model(src[row : row + 1], tgt_in)[0].argmax(-1).tolist()
        assert argmax[: len(out)] == out
        limit = int(max_output_lengths(src[row : row + 1], 1.5, 10, 64))
        assert len(out) == limit or argmax[len(out)] == EOS_ID


@pytest.mark.parametrize(
    ("a", "b", "max_positions"), [(1.0, 2, 64), (0.0, 0, 64), (1.5, 3, 64), (10.0, 5, 16)]
)
@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_respects_the_length_budget(
    a: float, b: int, max_positions: int, use_cache: bool
) -> None:
    model = make_model(max_positions=max_positions)
    with torch.no_grad():
        model.output.bias[EOS_ID] = -1e4  # never stop early: every output runs to its budget
    lengths = [1, 5, 8, 3]
    src = make_src(lengths)
    outputs = greedy_decode(model, src, max_len_a=a, max_len_b=b, use_cache=use_cache)
    expected = [min(max(int(a * n + b), 1), max_positions - 1) for n in lengths]
    assert [len(o) for o in outputs] == expected
    assert max_output_lengths(src, a, b, max_positions).tolist() == expected


def test_greedy_stops_at_eos_and_restores_train_mode() -> None:
    model = make_model().train()
    with torch.no_grad():
        model.output.bias[EOS_ID] = 1e4
    assert greedy_decode(model, make_src([3, 5])) == [[], []]
    assert model.training


# --------------------------------------------------------------------------- attention


def test_recorded_attention_is_normalised_and_masked() -> None:
    model = make_model()
    lengths = [2, 6, 4]
    src, tgt = make_src(lengths), make_tgt(3, 5)
    plain = model(src, tgt)
    with record_attention(model):
        recorded = model(src, tgt)
    torch.testing.assert_close(recorded, plain, atol=ATOL, rtol=0)  # recording changes nothing
    key_is_pad = (src == PAD_ID)[:, None, None, :]  # (B, 1, 1, S)
    kinds = model.attention_modules()
    for module in kinds["encoder"] + kinds["cross"] + kinds["decoder"]:
        w = module.weights
        assert w is not None and w.size(1) == 2  # (B, H, Lq, Lk)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=ATOL, rtol=0)
        assert (w >= 0).all()
    for module in kinds["encoder"] + kinds["cross"]:
        assert (module.weights.masked_select(key_is_pad.expand_as(module.weights)) == 0).all()
    for module in kinds["decoder"]:
        above = torch.ones(5, 5, dtype=torch.bool).triu(1)
        assert (module.weights[..., above] == 0).all()
        assert (module.weights[..., ~above] > 0).all()
    assert not any(m.keep_weights for mods in kinds.values() for m in mods)


def manual_attention(
    mha: MultiHeadAttention,
    x: torch.Tensor,
    memory: torch.Tensor,
    keep: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(Dh)) V from the module's own projections; keep: (B, Lq, Lk) bool."""
    B, Lq, D = x.shape
    H = mha.n_heads
    Dh = D // H

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(B, -1, H, Dh).transpose(1, 2)  # (B, H, L, Dh)

    q, k, v = heads(mha.q_proj(x)), heads(mha.k_proj(memory)), heads(mha.v_proj(memory))
    scores = q @ k.transpose(-2, -1) / math.sqrt(Dh)  # (B, H, Lq, Lk)
    scores = scores.masked_fill(~keep[:, None], float("-inf"))
    weights = scores.softmax(-1)
    out = (weights @ v).transpose(1, 2).reshape(B, Lq, D)
    return mha.out_proj(out), weights


def attention_case(seed: int = 0):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(32, 4, dropout=0.1).eval()
    for p in mha.parameters():  # non-zero biases, so a mistake in using them shows
        nn.init.normal_(p, std=0.3)
    x, memory = torch.randn(3, 5, 32), torch.randn(3, 7, 32)
    lengths = torch.tensor([7, 3, 5])
    key_ok = torch.arange(7)[None, :] < lengths[:, None]  # (B, S)
    return mha, x, memory, key_ok


@pytest.mark.parametrize("keep_weights", [False, True], ids=["sdpa", "recorded"])
def test_attention_matches_manual_reference(keep_weights: bool) -> None:
    mha, x, memory, key_ok = attention_case()
    mha.keep_weights = keep_weights
    with torch.no_grad():
        # cross-attention with a key padding mask
        expected, weights = manual_attention(mha, x, memory, key_ok[:, None, :].expand(3, 5, 7))
        got = mha(x, memory, mask=key_ok[:, None, None, :])
        torch.testing.assert_close(got, expected, atol=ATOL, rtol=0)
        if keep_weights:
            torch.testing.assert_close(mha.weights, weights, atol=ATOL, rtol=0)
        # causal self-attention
        causal = torch.ones(5, 5, dtype=torch.bool).tril().expand(3, 5, 5)
        expected, _ = manual_attention(mha, x, x, causal)
        torch.testing.assert_close(mha(x, is_causal=True), expected, atol=ATOL, rtol=0)


def test_attention_matches_torch_multihead_attention() -> None:
    mha, x, memory, key_ok = attention_case(seed=1)
    ref = nn.MultiheadAttention(32, 4, dropout=0.1, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight])
        )
        ref.in_proj_bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)

        expected, ref_weights = ref(
            x, memory, memory, key_padding_mask=~key_ok, average_attn_weights=False
        )
        torch.testing.assert_close(
            mha(x, memory, mask=key_ok[:, None, None, :]), expected, atol=ATOL, rtol=0
        )
        mha.keep_weights = True
        mha(x, memory, mask=key_ok[:, None, None, :])
        torch.testing.assert_close(mha.weights, ref_weights, atol=ATOL, rtol=0)

        future = torch.ones(5, 5, dtype=torch.bool).triu(1)  # nn.MHA: True = may NOT attend
        expected, _ = ref(x, x, x, attn_mask=future, need_weights=False)
        mha.keep_weights = False
        torch.testing.assert_close(mha(x, is_causal=True), expected, atol=ATOL, rtol=0)


def test_bf16_autocast_on_cpu_trains_close_to_fp32():
    """Under CPU bf16 autocast (attention kept in fp32) the logits stay close to fp32's and every
    parameter gets a finite gradient."""
    torch.manual_seed(0)
    cfg = ModelConfig(
        d_model=32, n_heads=2, encoder_layers=1, decoder_layers=1, d_ff=64, dropout=0.0
    )
    model = build_model(cfg, 20, 20)
    src = torch.randint(4, 20, (3, 7))
    tgt = torch.randint(4, 20, (3, 5))
    reference = model(src, tgt)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(src, tgt)
    assert logits.dtype == torch.bfloat16
    assert torch.allclose(logits.float(), reference, atol=0.1, rtol=0.05)
    logits.float().logsumexp(-1).mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
