"""Attention maps: every token labelled with its own text, one map per head or the one asked."""

from __future__ import annotations

import pytest
import torch

from translator.data.tokenizer import train_tokenizer
from translator.errors import ConfigError
from translator.inference.attention import attention_figure, token_labels

ITALIAN = ["la stazione è lì.", "è già perché così.", "la città è più bella."] * 50


@pytest.fixture(scope="module")
def bpe():
    return train_tokenizer(ITALIAN, min_freq=2, max_vocab=400, kind="bpe")


def test_byte_level_pieces_are_labelled_with_their_text(bpe) -> None:
    text = "la stazione è lì, la città è più bella"
    ids = bpe.encode(text).ids
    labels = token_labels(bpe, ids)
    raw = [bpe.id_to_token(i) for i in ids]
    assert any("Ġ" in t or "Ã" in t for t in raw)  # the byte form the labels must not show
    assert not any("Ġ" in label or "Ã" in label for label in labels), labels
    assert "".join(labels).replace("▁", " ") == " " + text  # each piece's text, spaces marked
    assert "▁è" in labels


def test_a_piece_that_ends_inside_a_character_shows_its_bytes(bpe) -> None:
    half = bpe.token_to_id("Ã")  # the first byte of è (0xC3), alone
    assert half is not None and token_labels(bpe, [half]) == ["\\xc3"]


def test_specials_and_word_pieces_keep_their_own_text() -> None:
    word = train_tokenizer(["la casa è rossa ."] * 5, kind="word")
    ids = [2, *word.encode("la casa è rossa .").ids, 3]
    labels = token_labels(word, ids)
    assert labels[0] == "[SOS]" and labels[-1] == "[EOS]"
    assert labels[1:-1] == [word.id_to_token(i) for i in ids[1:-1]]


def _maps(heads: int = 4) -> dict[str, list[torch.Tensor]]:
    return {"cross": [torch.rand(heads, 3, 5).softmax(-1) for _ in range(2)]}


def test_one_head_or_the_mean_is_one_large_map() -> None:
    src, out = list("abcde"), list("xyz")
    every = attention_figure(_maps(), src, ["s", *out[:-1]], out)
    assert len([ax for ax in every.axes if ax.has_data()]) == 4
    for head, title in ((2, "head 2"), ("mean", "mean of 4 heads")):
        fig = attention_figure(_maps(), src, ["s", *out[:-1]], out, layer=1, head=head)
        (ax,) = fig.axes
        assert ax.get_title() == f"cross-attention, layer 1, {title}"
        assert [t.get_text() for t in ax.get_xticklabels()] == src
        assert fig.get_size_inches()[0] < every.get_size_inches()[0]
    mean = attention_figure(_maps(), src, ["s", *out[:-1]], out, head="mean")
    assert mean.axes[0].images[0].get_array().sum() == pytest.approx(3.0, abs=1e-5)  # rows sum to 1


def test_a_head_out_of_range_is_refused() -> None:
    with pytest.raises(ConfigError, match="heads 1 to 4"):
        attention_figure(_maps(), list("abcde"), list("sxy"), list("xyz"), head=5)
