"""The encoder-decoder Transformer of "Attention Is All You Need", written from scratch.

Notation used in the shape comments:
    B batch, S source length, T target length, L any length,
    D model width (d_model), H heads, Dh head width (D / H), F feed-forward width, V vocabulary.

Boolean masks follow the `F.scaled_dot_product_attention` convention: True means "may attend".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from translator.config import ModelConfig
from translator.specials import PAD_ID

# One dict per decoder layer: {"self": {"k", "v"}, "cross": {"k", "v"}}, each (B, H, L, Dh).
DecoderCache = list[dict[str, dict[str, torch.Tensor]]]


def padding_mask(tokens: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """(B, L) token ids -> (B, 1, 1, L) mask, True at real (non-pad) keys."""
    return (tokens != pad_id)[:, None, None, :]


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over H heads, with an optional key/value cache."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = dropout
        self.keep_weights = False  # set by `record_attention`; then `weights` holds (B, H, Lq, Lk)
        self.weights: torch.Tensor | None = None

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        is_causal: bool = False,
        cache: dict[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Self-attention over `x`, or cross-attention from `x` to `memory` when it is given.

        With a `cache`, self-attention appends this call's keys/values to it, and cross-attention
        projects `memory` once and reuses the result on later calls.
        """
        q = self._split_heads(self.q_proj(x))  # (B, H, Lq, Dh)
        if memory is None:
            k, v = self._split_heads(self.k_proj(x)), self._split_heads(self.v_proj(x))
            if cache is not None:
                if "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)  # (B, H, Lk, Dh)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        elif cache is not None and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k, v = self._split_heads(self.k_proj(memory)), self._split_heads(self.v_proj(memory))
            if cache is not None:
                cache["k"], cache["v"] = k, v
        out = self._attend(q, k, v, mask, is_causal)  # (B, H, Lq, Dh)
        B, H, L, Dh = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(B, L, H * Dh))  # (B, Lq, D)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, L, D = x.shape
        return x.view(B, L, self.n_heads, D // self.n_heads).transpose(1, 2)  # (B, H, L, Dh)

    def _attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None,
        is_causal: bool,
    ) -> torch.Tensor:
        dropout = self.dropout if self.training else 0.0
        if not self.keep_weights:
            if q.device.type == "cpu" and q.dtype == torch.bfloat16:
                # On CPU the bf16 attention kernel's backward ran 10x slower than fp32's and took
                # a third of a cpu.yaml step (bench_train.py --profile): attend in fp32 there.
                with torch.autocast("cpu", enabled=False):
                    out = F.scaled_dot_product_attention(
                        q.float(), k.float(), v.float(), mask, dropout, is_causal
                    )
                return out.to(q.dtype)
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=is_causal
            )
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, Lq, Lk)
        if is_causal:
            Lq, Lk = scores.shape[-2:]
            causal = torch.ones(Lq, Lk, dtype=torch.bool, device=q.device).tril()
            mask = causal if mask is None else mask & causal
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        self.weights = weights.detach()
        return F.dropout(weights, dropout, self.training) @ v


class FeedForward(nn.Module):
    """Position-wise two-layer network: D -> F -> D."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.activation = {"gelu": F.gelu, "swish": F.silu}.get(activation, F.relu)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.dropout(self.activation(self.fc1(x))))


class Residual(nn.Module):
    """A sublayer with its residual connection and LayerNorm, before (pre) or after (post) it."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]):
        if self.pre_norm:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        pre = cfg.norm == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.attn_block = Residual(cfg.d_model, cfg.dropout, pre)
        self.ffn_block = Residual(cfg.d_model, cfg.dropout, pre)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        x = self.attn_block(x, lambda h: self.self_attn(h, mask=src_mask))
        return self.ffn_block(x, self.ffn)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        pre = cfg.norm == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.self_block = Residual(cfg.d_model, cfg.dropout, pre)
        self.cross_block = Residual(cfg.d_model, cfg.dropout, pre)
        self.ffn_block = Residual(cfg.d_model, cfg.dropout, pre)

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        cache: dict[str, dict[str, torch.Tensor]] | None = None,
    ) -> torch.Tensor:
        self_cache = cache["self"] if cache is not None else None
        cross_cache = cache["cross"] if cache is not None else None
        # With a cache, y holds only the newest position, which may attend to every cached one.
        y = self.self_block(
            y, lambda h: self.self_attn(h, is_causal=cache is None, cache=self_cache)
        )
        y = self.cross_block(
            y, lambda h: self.cross_attn(h, memory, mask=src_mask, cache=cross_cache)
        )
        return self.ffn_block(y, self.ffn)


class Embedding(nn.Module):
    """Token embedding scaled by sqrt(D) (or not), plus sinusoidal or learned positions, then
    dropout."""

    def __init__(self, vocab_size: int, cfg: ModelConfig) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, cfg.d_model)
        self.scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0
        self.dropout = nn.Dropout(cfg.dropout)
        if cfg.positions == "learned":
            self.positions = nn.Parameter(torch.zeros(cfg.max_positions, cfg.d_model))
            nn.init.normal_(self.positions, std=0.02)
        else:
            table = sinusoidal_positions(cfg.max_positions, cfg.d_model)
            if cfg.positions == "sinusoidal_halves":
                table = torch.cat([table[:, 0::2], table[:, 1::2]], dim=1)  # [sin... | cos...]
            self.register_buffer("positions", table, persistent=False)

    def forward(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        B, L = tokens.shape
        if start + L > self.positions.size(0):
            raise ValueError(
                f"sequence of {start + L} tokens exceeds max_positions {self.positions.size(0)}"
            )
        x = self.tokens(tokens) * self.scale + self.positions[start : start + L]  # (B, L, D)
        return self.dropout(x)


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """The paper's fixed position encodings, (length, D)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]  # (L, 1)
    freq = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq[: d_model // 2])
    return table


class Transformer(nn.Module):
    """Encoder-decoder Transformer: encode(src), decode(tgt_in, ...), project(hidden) -> logits."""

    def __init__(self, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embedding(src_vocab_size, cfg)
        self.tgt_embed = Embedding(tgt_vocab_size, cfg)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.decoder_layers))
        final_norm: Callable[[], nn.Module] = (
            (lambda: nn.LayerNorm(cfg.d_model)) if cfg.norm == "pre" else nn.Identity
        )
        self.encoder_norm = final_norm()
        self.decoder_norm = final_norm()
        self.output = nn.Linear(cfg.d_model, tgt_vocab_size)
        self._init_weights()
        if cfg.tie_embeddings:
            self.output.weight = self.tgt_embed.tokens.weight

    def _init_weights(self) -> None:
        for name, param in self.named_parameters():
            if param.dim() > 1 and not name.endswith("positions"):
                nn.init.xavier_uniform_(param)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S) source ids -> memory (B, S', D) and its padding mask (B, 1, 1, S').

        Sources always come as [SOS] words [EOS]; a model with `source_sos` false (Marian's
        convention) reads them without the [SOS], so S' = S - 1 there."""
        if not self.cfg.source_sos:
            src = src[:, 1:]
        src_mask = padding_mask(src)
        x = self.src_embed(src)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.encoder_norm(x), src_mask

    def decode(
        self,
        tgt_in: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        cache: DecoderCache | None = None,
    ) -> torch.Tensor:
        """(B, T) target ids -> hidden states (B, T, D).

        With a `cache` (from `new_cache`), `tgt_in` holds only the newest token of each sequence,
        (B, 1), and the positions before it come from the cache.
        """
        start = cache_length(cache) if cache is not None else 0
        y = self.tgt_embed(tgt_in, start)
        for i, layer in enumerate(self.decoder_layers):
            y = layer(y, memory, src_mask, cache[i] if cache is not None else None)
        return self.decoder_norm(y)

    def project(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., D) hidden states -> (..., V) logits."""
        return self.output(hidden)

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, select: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits (B, T, V) for teacher-forced `tgt_in`; with a (B, T) bool `select`, (N, V)."""
        memory, src_mask = self.encode(src)
        hidden = self.decode(tgt_in, memory, src_mask)
        if select is not None:
            hidden = hidden[select]  # (N, D): skip the projection of padded positions
        return self.project(hidden)

    def new_cache(self) -> DecoderCache:
        """An empty key/value cache for incremental decoding."""
        return [{"self": {}, "cross": {}} for _ in self.decoder_layers]

    def attention_modules(self) -> dict[str, list[MultiHeadAttention]]:
        """The attention modules of each kind, one per layer."""
        return {
            "encoder": [layer.self_attn for layer in self.encoder_layers],
            "decoder": [layer.self_attn for layer in self.decoder_layers],
            "cross": [layer.cross_attn for layer in self.decoder_layers],
        }


def cache_length(cache: DecoderCache) -> int:
    """Number of target positions already in the cache."""
    first = cache[0]["self"] if cache else {}
    return first["k"].size(2) if "k" in first else 0


def reorder_cache(cache: DecoderCache, index: torch.Tensor) -> DecoderCache:
    """Select rows `index` of every cached tensor (beam reordering, dropping finished rows)."""
    return [
        {
            kind: {name: t.index_select(0, index) for name, t in kv.items()}
            for kind, kv in layer.items()
        }
        for layer in cache
    ]


def build_model(
    cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, shared_vocab: bool = False
) -> Transformer:
    """Build the Transformer for the given vocabulary sizes; with `shared_vocab` (one vocabulary
    for both languages) the source, target and output embeddings are one matrix."""
    model = Transformer(cfg, src_vocab_size, tgt_vocab_size)
    if shared_vocab:
        if src_vocab_size != tgt_vocab_size:
            raise ValueError("a shared vocabulary needs equal source and target sizes")
        model.tgt_embed.tokens.weight = model.src_embed.tokens.weight
        model.output.weight = model.src_embed.tokens.weight
    return model


def count_parameters(model: nn.Module) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class record_attention:
    """Context manager: while active, every attention module keeps its weights in `.weights`."""

    def __init__(self, model: Transformer) -> None:
        self.modules = [m for mods in model.attention_modules().values() for m in mods]

    def __enter__(self) -> record_attention:
        for m in self.modules:
            m.keep_weights = True
        return self

    def __exit__(self, *exc: Any) -> None:
        for m in self.modules:
            m.keep_weights = False
