"""A run trained here with `tokenizer.kind: sentencepiece` (configs/sentencepiece.yaml's model)
exports whole to transformers, and translates there as here; other runs are refused in one line."""

from __future__ import annotations

from pathlib import Path

from helpers import ROOT, cli, train_tiny

MARIAN_SHAPE = [
    "tokenizer.kind=sentencepiece",
    "tokenizer.vocab_size=300",
    "tokenizer.shared=true",
    "model.norm=post",
    "model.positions=sinusoidal_halves",
    "model.source_sos=false",
    "model.activation=swish",
    "model.tie_embeddings=true",
    "decode.search=transformers",
    "decode.no_repeat_ngram=0",
    "decode.max_run=0",
    "decode.split_sentences=false",
    "decode.beam=4",
    "decode.alpha=1.0",
    "decode.max_len_a=0",
    "decode.max_len_b=40",
]


def test_trained_sentencepiece_run_exports_whole(tmp_path: Path) -> None:
    from test_export_transformers import hf_translate

    run = train_tiny(tmp_path, 60, *MARIAN_SHAPE)
    assert (run / "tokenizer_src.json").read_text().startswith('{"format": "translator-sentence')
    out = tmp_path / "hf"
    done = cli(
        tmp_path, "export", "--run", "tiny", "--format", "transformers", "--output", str(out)
    )
    assert done.returncode == 0, done.stderr
    sentences = ["the cat eats .", "a dog sees the cat .", "the big house ."]
    done = cli(tmp_path, "translate", "--run", "tiny", *sentences)
    assert done.returncode == 0, done.stderr
    ours = done.stdout.splitlines()
    assert ours == hf_translate(out, sentences, 4)


def test_a_run_of_another_kind_is_refused(tmp_path: Path) -> None:
    train_tiny(tmp_path, 10)
    out = tmp_path / "hf"
    done = cli(
        tmp_path, "export", "--run", "tiny", "--format", "transformers", "--output", str(out)
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert "tokenizer.kind: sentencepiece" in lines[-1] and lines[-1].startswith("error: ")
    assert not out.exists()


def test_the_shipped_config_is_marian_shaped() -> None:
    from translator.config import load_config

    config = load_config(ROOT / "configs" / "sentencepiece.yaml")
    assert config.tokenizer.kind == "sentencepiece"
    assert (config.model.norm, config.model.positions, config.model.source_sos) == (
        "post", "sinusoidal_halves", False)  # fmt: skip
