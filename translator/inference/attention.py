"""Attention maps: the attention weights of one translated sentence, drawn per head to an image.

matplotlib is imported only when a figure is drawn, and draws off-screen (Agg), so `translate`
without `--attention` never loads it and no display is needed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from tokenizers import Tokenizer

from translator.config import DecodeConfig
from translator.errors import ConfigError
from translator.inference.decode import max_output_lengths
from translator.model.transformer import Transformer, record_attention
from translator.specials import EOS_ID, SOS_ID, UNK

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# kind -> one (H, Lq, Lk) tensor per layer
AttentionMaps = dict[str, list[torch.Tensor]]

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
) -> Figure:
    """The attention maps of a decoded output (ids without [SOS]/[EOS]) for its encoder input."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    limit = int(max_output_lengths(src, cfg.max_len_a, cfg.max_len_b, model.cfg.max_positions)[0])
    predicted = output + [EOS_ID] if len(output) < limit else output  # what each position emits
    tgt_in = [SOS_ID, *predicted[:-1]]
    maps = attention_weights(model, src, torch.tensor([tgt_in], device=device))

    def labels(tokenizer: Tokenizer, ids: list[int]) -> list[str]:
        return [tokenizer.id_to_token(i) or UNK for i in ids]

    return attention_figure(
        maps,
        labels(src_tokenizer, src_ids),
        labels(tgt_tokenizer, tgt_in),
        labels(tgt_tokenizer, predicted),
        layer,
        self_attention,
    )


def attention_figure(
    maps: AttentionMaps,
    src_tokens: list[str],
    tgt_in_tokens: list[str],
    out_tokens: list[str],
    layer: int | None = None,
    self_attention: bool = False,
) -> Figure:
    """Cross-attention of `layer` (1-based; default the last) per head, output rows by source
    columns; with `self_attention`, the encoder's and decoder's self-attention of that layer too."""
    from matplotlib.figure import Figure

    # (title, kind, row labels, row axis, column labels, column axis)
    panels = [("cross-attention", "cross", out_tokens, "output", src_tokens, "source")]
    if self_attention:
        panels += [
            ("encoder self-attention", "encoder", src_tokens, "source", src_tokens, "source"),
            ("decoder self-attention", "decoder", out_tokens, "output", tgt_in_tokens, "input"),
        ]
    heads = maps["cross"][0].size(0)
    n_cols = min(heads, HEADS_PER_ROW)
    rows_per_panel = math.ceil(heads / n_cols)
    width = n_cols * _inches(max(len(p[4]) for p in panels))
    heights = [_inches(len(p[2])) for p in panels for _ in range(rows_per_panel)]
    fig = Figure(figsize=(width, sum(heights)), layout="constrained")
    axes = fig.subplots(len(heights), n_cols, squeeze=False, gridspec_kw={"height_ratios": heights})
    for p, (title, kind, rows, row_name, cols, col_name) in enumerate(panels):
        index = _layer_index(layer, len(maps[kind]), title)
        weights = maps[kind][index]  # (H, Lq, Lk)
        assert weights.shape[1:] == (len(rows), len(cols)), (kind, weights.shape)
        for h in range(rows_per_panel * n_cols):
            ax = axes[p * rows_per_panel + h // n_cols][h % n_cols]
            if h >= heads:
                ax.set_axis_off()
                continue
            ax.imshow(weights[h].numpy(), cmap="viridis", vmin=0.0, aspect="auto")
            ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=8)
            ax.set_yticks(range(len(rows)), rows, fontsize=8)
            ax.set_xlabel(col_name, fontsize=8)
            ax.set_ylabel(row_name, fontsize=8)
            ax.set_title(f"{title}, layer {index + 1}, head {h + 1}", fontsize=9)
    return fig


def _inches(n_tokens: int) -> float:
    """Panel side for `n_tokens` labelled rows or columns."""
    return max(2.5, 0.22 * n_tokens + 1.4)


def _layer_index(layer: int | None, n_layers: int, title: str) -> int:
    if layer is None:
        return n_layers - 1
    if not 1 <= layer <= n_layers:
        raise ConfigError(
            f"--attention-layer {layer}: the model's {title} has layers 1 to {n_layers}"
        )
    return layer - 1
