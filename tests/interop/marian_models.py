"""Small Marian models made as transformers makes them (`save_pretrained`), for the interop tests
and scripts/bench_import.py: SentencePiece models trained on a few thousand pairs, a MarianMTModel
of random weights trained a few hundred steps (so that its outputs end, and differ with the
input), and a random final logits bias."""

from __future__ import annotations

import io
import json
from pathlib import Path

import torch
from helpers import ROOT, make_pairs

DATA = ROOT.parent / "shared" / "data" / "en-it"
REAL = (DATA / "opensubs.jsonl").is_file()
"""The shared corpus is beside the repository (CI has it). Without it the toy language stands in:
twenty words, so outputs vary far less with the input."""


def corpus(n: int) -> list[tuple[str, str]]:
    """`n` training pairs: the shared subtitles when they are there, else the toy language."""
    path = DATA / "opensubs.jsonl"
    if not path.is_file():
        return make_pairs(n, seed=3)
    pairs = []
    with path.open(encoding="utf-8") as f:
        for line, _ in zip(f, range(n), strict=False):
            t = json.loads(line)["translation"]
            pairs.append((t["en"], t["it"]))
    return pairs


def dev(n: int = 200) -> list[tuple[str, str]]:
    """`n` pairs of the public dev set when it is there (never trained on), else toy ones."""
    path = DATA / "tatoeba-dev.jsonl"
    if not path.is_file():
        return make_pairs(n, seed=9)
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line)["translation"] for line, _ in zip(f, range(n), strict=False)]
    return [(t["en"], t["it"]) for t in rows]


def train_spm(texts: list[str], size: int) -> bytes:
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, vocab_size=size,
        model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
        unk_id=1, eos_id=2, bos_id=-1, pad_id=0, minloglevel=2, num_threads=2,
    )  # fmt: skip
    return model.getvalue()


def pieces(model: bytes) -> list[str]:
    import sentencepiece as spm

    p = spm.SentencePieceProcessor(model_proto=model)
    return [p.id_to_piece(i) for i in range(p.get_piece_size()) if not p.is_control(i)]


def make_marian(
    folder: Path,
    shared: bool = True,
    steps: int = 0,
    init_std: float | None = None,
    eos_bias: float | None = None,
    d_model: int = 64,
    layers: int = 2,
    heads: int = 4,
    d_ff: int = 128,
    pairs: int = 3000,
    seed: int = 0,
    language_codes: tuple[str, ...] = (),
) -> Path:
    """A Marian directory at `folder`: one vocabulary (vocab.json) or, with `shared` false, one
    per side (vocab.json and target_vocab.json, `separate_vocabs`, with <pad> early, at 2).
    Random weights (`init_std`), or with `steps` trained that many steps of 32 pairs."""
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    if init_std is None:  # outputs that vary with the input, and end at many lengths
        init_std = 0.2 if REAL else 0.3
    if eos_bias is None:
        eos_bias = 5.0 if REAL else 3.0
    folder.mkdir(parents=True, exist_ok=True)
    data = corpus(pairs)
    src_spm = train_spm([s for s, _ in data], 700)
    tgt_spm = train_spm([t for _, t in data], 800)
    (folder / "source.spm").write_bytes(src_spm)
    (folder / "target.spm").write_bytes(tgt_spm)
    specials = ["</s>", "<unk>"] if shared else ["</s>", "<unk>", "<pad>"]
    src_vocab = {p: i for i, p in enumerate(dict.fromkeys([*specials, *language_codes,
                                                           *pieces(src_spm)]))}  # fmt: skip
    if shared:
        for p in pieces(tgt_spm):
            src_vocab.setdefault(p, len(src_vocab))
        src_vocab["<pad>"] = len(src_vocab)
        tgt_vocab = src_vocab
    else:
        tgt_vocab = {p: i for i, p in enumerate(dict.fromkeys([*specials, *pieces(tgt_spm)]))}
    (folder / "vocab.json").write_text(json.dumps(src_vocab))
    if not shared:
        (folder / "target_vocab.json").write_text(json.dumps(tgt_vocab))
    tokenizer = MarianTokenizer(
        str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"),
        target_vocab_file=None if shared else str(folder / "target_vocab.json"),
        source_lang="en", target_lang="it", separate_vocabs=not shared,
    )  # fmt: skip
    pad = src_vocab["<pad>"]
    config = MarianConfig(
        vocab_size=len(src_vocab), decoder_vocab_size=len(tgt_vocab),
        share_encoder_decoder_embeddings=shared, d_model=d_model,
        encoder_layers=layers, decoder_layers=layers,
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=d_ff, decoder_ffn_dim=d_ff, max_position_embeddings=256,
        pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad, forced_eos_token_id=0,
        activation_function="swish", scale_embedding=True,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = MarianMTModel(config)
    _train(model, tokenizer, data, steps)
    model.eval()
    with torch.no_grad():
        if not steps:  # weights large enough that the output follows the input, not the bias
            for p in model.parameters():
                if p.dim() > 1:
                    p.normal_(0.0, init_std)
        # a bias the parity must carry (a model saved fresh has zeros), </s> likely enough that
        # outputs end at many lengths, some at the length budget
        model.final_logits_bias.normal_(0.0, 1.0)
        model.final_logits_bias[0, 0] += eos_bias
    gen = model.generation_config
    gen.bad_words_ids, gen.num_beams, gen.max_length = [[pad]], 4, 64
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def _train(model, tokenizer, data: list[tuple[str, str]], steps: int) -> None:
    if not steps:
        return
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(steps):
        batch = [data[i] for i in torch.randint(0, len(data), (32,), generator=gen).tolist()]
        enc = tokenizer(
            [s for s, _ in batch], text_target=[t for _, t in batch],
            return_tensors="pt", padding=True, truncation=True, max_length=40,
        )  # fmt: skip
        enc["labels"][enc["labels"] == tokenizer.pad_token_id] = -100
        loss = model(**enc).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
