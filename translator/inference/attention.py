"""Attention maps: the attention weights of one translated sentence, drawn to an image, one map
per head or one map of a chosen head (or of the heads' mean).

Each row and column is labelled with its token's own text: a byte-level BPE piece as the
characters its bytes spell ("Ġstazione" as "▁stazione", "Ã¨" as "è"), a leading space shown as
"▁" as the word and unigram pieces already show it, bytes that end inside a character as "\\xc3".

matplotlib is imported only when a figure is drawn, and draws off-screen (Agg), so `translate`
without `--attention` never loads it and no display is needed.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, Literal

import torch
from tokenizers import Tokenizer

from translator.config import DecodeConfig
from translator.data.tokenizer import SPACE, tokenizer_kind
from translator.errors import ConfigError
from translator.inference.decode import max_output_lengths
from translator.model.transformer import Transformer, record_attention
from translator.specials import EOS_ID, SOS_ID, SPECIAL_TOKENS, UNK

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# kind -> one (H, Lq, Lk) tensor per layer
AttentionMaps = dict[str, list[torch.Tensor]]
Head = int | Literal["mean"] | None
"""Which head to draw: a 1-based index, "mean" (the heads' average), or None (each head)."""

HEADS_PER_ROW = 4


@torch.no_grad()
def attention_weights(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor) -> AttentionMaps:
    """Weights of every attention module for one (1, S) source and (1, T) decoder input.

    A teacher-forced pass over the output gives the same weights as the incremental decoding that
    produced it (the cache is exact), in one call.
    """
    model.eval()
    with record_attention(model):
        model(src, tgt_in)
    return {
        kind: [m.weights[0].float().cpu() for m in modules]
        for kind, modules in model.attention_modules().items()
    }


def translation_figure(
    model: Transformer,
    src_ids: list[int],
    output: list[int],
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    cfg: DecodeConfig,
    layer: int | None = None,
    self_attention: bool = False,
    head: Head = None,
) -> Figure:
    """The attention maps of a decoded output (ids without [SOS]/[EOS]) for its encoder input."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    limit = int(max_output_lengths(src, cfg.max_len_a, cfg.max_len_b, model.cfg.max_positions)[0])
    predicted = output + [EOS_ID] if len(output) < limit else output  # what each position emits
    tgt_in = [SOS_ID, *predicted[:-1]]
    maps = attention_weights(model, src, torch.tensor([tgt_in], device=device))
    return attention_figure(
        maps,
        token_labels(src_tokenizer, src_ids if model.cfg.source_sos else src_ids[1:]),
        token_labels(tgt_tokenizer, tgt_in),
        token_labels(tgt_tokenizer, predicted),
        layer,
        self_attention,
        head,
    )


def token_labels(tokenizer: Tokenizer, ids: list[int]) -> list[str]:
    """Each token's own text, for the axes of a map (see the module's docstring)."""
    byte_level = tokenizer_kind(tokenizer) == "bpe"
    return [_label(tokenizer.id_to_token(i) or UNK, byte_level) for i in ids]


def _label(token: str, byte_level: bool) -> str:
    if token in SPECIAL_TOKENS or not byte_level:
        return token
    byte_of = _byte_values()
    if not all(c in byte_of for c in token):  # not a byte-level piece after all
        return token
    text = bytes(byte_of[c] for c in token).decode("utf-8", errors="backslashreplace")
    return SPACE + text[1:] if text.startswith(" ") else text


@cache
def _byte_values() -> dict[str, int]:
    """Byte-level BPE's alphabet: the character that stands for each byte, back to the byte.

    Printable Latin-1 bytes stand for themselves; the others (controls, space, a few more) take
    the characters from U+0100 on, in byte order (GPT-2's `bytes_to_unicode`).
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, shifted = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + shifted)
            shifted += 1
    return {c: b for b, c in chars.items()}


def attention_figure(
    maps: AttentionMaps,
    src_tokens: list[str],
    tgt_in_tokens: list[str],
    out_tokens: list[str],
    layer: int | None = None,
    self_attention: bool = False,
    head: Head = None,
) -> Figure:
    """Cross-attention of `layer` (1-based; default the last), output rows by source columns: one
    map per head, or the one `head` asks for; with `self_attention`, the encoder's and decoder's
    self-attention of that layer too."""
    from matplotlib.figure import Figure

    # (title, kind, row labels, row axis, column labels, column axis)
    panels = [("cross-attention", "cross", out_tokens, "output", src_tokens, "source")]
    if self_attention:
        panels += [
            ("encoder self-attention", "encoder", src_tokens, "source", src_tokens, "source"),
            ("decoder self-attention", "decoder", out_tokens, "output", tgt_in_tokens, "input"),
        ]
    heads = maps["cross"][0].size(0)
    chosen = _heads(head, heads)  # (index or None for the mean, its title)
    n_cols = min(len(chosen), HEADS_PER_ROW)
    rows_per_panel = math.ceil(len(chosen) / n_cols)
    scale = 1.0 if head is None else 1.25  # one map: larger type, and room for it
    width = n_cols * _inches(max(len(p[4]) for p in panels), scale)
    heights = [_inches(len(p[2]), scale) for p in panels for _ in range(rows_per_panel)]
    fig = Figure(figsize=(width, sum(heights)), layout="constrained")
    axes = fig.subplots(len(heights), n_cols, squeeze=False, gridspec_kw={"height_ratios": heights})
    size = 8 * scale
    for p, (title, kind, rows, row_name, cols, col_name) in enumerate(panels):
        index = _layer_index(layer, len(maps[kind]), title)
        weights = maps[kind][index]  # (H, Lq, Lk)
        assert weights.shape[1:] == (len(rows), len(cols)), (kind, weights.shape)
        for n in range(rows_per_panel * n_cols):
            ax = axes[p * rows_per_panel + n // n_cols][n % n_cols]
            if n >= len(chosen):
                ax.set_axis_off()
                continue
            h, head_name = chosen[n]
            grid = weights.mean(0) if h is None else weights[h]  # (Lq, Lk)
            ax.imshow(grid.numpy(), cmap="viridis", vmin=0.0, aspect="auto")
            ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=size)
            ax.set_yticks(range(len(rows)), rows, fontsize=size)
            ax.set_xlabel(col_name, fontsize=size)
            ax.set_ylabel(row_name, fontsize=size)
            ax.set_title(f"{title}, layer {index + 1}, {head_name}", fontsize=size + 1)
    return fig


def _heads(head: Head, heads: int) -> list[tuple[int | None, str]]:
    if head is None:
        return [(h, f"head {h + 1}") for h in range(heads)]
    if head == "mean":
        return [(None, f"mean of {heads} heads")]
    if not 1 <= head <= heads:
        raise ConfigError(f"attention head {head}: the model has heads 1 to {heads}")
    return [(head - 1, f"head {head}")]


def _inches(n_tokens: int, scale: float = 1.0) -> float:
    """Panel side for `n_tokens` labelled rows or columns."""
    return max(2.5, scale * (0.22 * n_tokens + 1.4))


def _layer_index(layer: int | None, n_layers: int, title: str) -> int:
    if layer is None:
        return n_layers - 1
    if not 1 <= layer <= n_layers:
        raise ConfigError(
            f"--attention-layer {layer}: the model's {title} has layers 1 to {n_layers}"
        )
    return layer - 1
