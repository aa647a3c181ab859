"""Whatever text arrives, the tokenizer and `translate` never crash, and `translate` answers with
exactly one line per input line: empty, blank, unknown, enormous, emoji, control characters,
right-to-left and mixed scripts, and random Unicode (hypothesis)."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import ROOT, make_pairs, write_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translator.data.tokenizer import decode_ids, detokenize, normalize_text, train_tokenizer
from translator.inference.predict import (
    LoadedModel,
    load_model,
    override_config,
    translate_sentences,
)
from translator.specials import EOS_ID, PAD_ID, SOS_ID, UNK_ID
from translator.training.train import train_command

WEIRD_LINES = {
    "empty": "",
    "whitespace only": " \t  \t ",
    "unknown words only": "zyzzyva quixotic flibbertigibbet",
    "10,000 words": " ".join(["one", "two", "cat"] * 3333 + ["dog"]),
    "one enormous word": "a" * 50_000,
    "emoji": "the cat 🐈‍⬛ is red ❤️‍🔥 👩🏽‍💻 🇮🇹",
    "control characters": "one\x00two\x07three\x1b[31mred\x1b[0m\x7f\x08\x0b\x0c\r four",
    "unicode line separators": "one\x85two\u2028three\u2029four\x1c\x1d\x1e five",
    "right-to-left": "مرحبا بالعالم שלום עולם",
    "bidi overrides": "\u202eone two\u202c \u2067three\u2069 \u200f",
    "mixed scripts": "the cat القط il gatto 猫 кот γάτα 🐈 1️⃣ two",
    "no spaces": "日本語のテキストには空白がありません",
    "combining marks": "e\u0301\u0301\u0301 Z\u0351\u0352\u0353\u0354a\u0300l\u0301g\u0302o",
    "byte-order mark inside": "\ufeffone \ufefftwo",
    "special token text": "[UNK] [PAD] [SOS] [EOS] one [EOS] two [PAD]",
    "punctuation only": "...!!!???,,,;;;«»“”‘’",
    "private use and non-characters": "\ue000\uf8ff\ufffe\uffff \U0010fffd",
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run, trained for a few steps."""
    root = tmp_path_factory.mktemp("inputs")
    corpus = write_jsonl(root / "corpus.jsonl", make_pairs(300))
    train_command(
        ROOT / "configs" / "tiny.yaml",
        [f"data.source={corpus}", "train.max_steps=4", "train.eval_every=0"],
        "tiny",
        None,
        "cpu",
        runs_root=root / "runs",
        weights_root=root / "weights",
    )
    return root / "weights" / "tiny"


@pytest.fixture(scope="module")
def loaded(run_dir: Path) -> LoadedModel:
    return load_model(run_dir / "best.pt", run_dir, torch.device("cpu"))


@pytest.fixture(scope="module")
def short_outputs(loaded: LoadedModel) -> LoadedModel:
    """The same model with outputs capped at a few tokens: many examples, quickly."""
    cfg = override_config(loaded.config, None, ["decode.max_len_a=0.2", "decode.max_len_b=2"], "t")
    return dataclasses.replace(loaded, config=cfg)


def translate_cli(run_dir: Path, *args: str, stdin: bytes | None = None):
    return subprocess.run(
        [sys.executable, "-m", "translator", "translate", "--run", run_dir.name,
         "--weights-dir", str(run_dir.parent), "--device", "cpu", *args],
        input=stdin,
        capture_output=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip


def output_lines(stdout: bytes) -> list[str]:
    text = stdout.decode("utf-8")
    assert text.endswith("\n") or text == ""
    return text.split("\n")[:-1]


# --------------------------------------------------------------------------- the CLI


def random_lines(n: int, seed: int) -> list[str]:
    """`n` lines of seeded random code points from every plane (no newline, no surrogate)."""
    rng = random.Random(seed)

    def char() -> str:
        while True:
            c = chr(
                rng.choice([rng.randrange(0x80), rng.randrange(0x3000), rng.randrange(0x110000)])
            )
            if c != "\n" and not 0xD800 <= ord(c) <= 0xDFFF:
                return c

    return ["".join(char() for _ in range(rng.randrange(40))) for _ in range(n)]


def test_stdin_gives_one_line_per_line_whatever_it_holds(
    run_dir: Path, loaded: LoadedModel
) -> None:
    """The weird lines, 300 random ones, CRLF endings, invalid UTF-8, no final newline."""
    weird = list(WEIRD_LINES.values())
    lines = weird + random_lines(300, seed=7)
    stdin = "".join(line + "\n" for line in lines).encode()
    stdin += b"crlf one two\r\n\xff\xfe\xc3( bad bytes\n\r\nlast line without a newline"
    expected = lines + [
        "crlf one two",
        "\ufffd\ufffd\ufffd( bad bytes",
        "",
        "last line without a newline",
    ]

    done = translate_cli(run_dir, stdin=stdin)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    out = output_lines(done.stdout)
    assert len(out) == len(expected)
    assert all(o == "" for o, line in zip(out, expected, strict=True) if not line.strip())
    # Line k of the output is the translation of line k of the input: nothing shifted.
    assert out == translate_sentences(loaded, expected)
    names = list(WEIRD_LINES)
    n = names.index("10,000 words") + 1
    # Translated in pieces the model takes, and said so: not silently cut short.
    assert f"line {n}: a sentence of 10000 words".encode() in done.stderr
    assert b"pieces cut at its clauses" in done.stderr


def test_weird_arguments_give_one_line_each(run_dir: Path, loaded: LoadedModel) -> None:
    args = [line for line in WEIRD_LINES.values() if "\x00" not in line]  # argv has no NUL
    done = translate_cli(run_dir, "--", *args)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
    assert output_lines(done.stdout) == translate_sentences(loaded, args)


# --------------------------------------------------------------------------- in-process, hypothesis


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.text(max_size=40), min_size=1, max_size=6))
def test_translate_any_unicode_one_output_per_input(
    short_outputs: LoadedModel, lines: list[str]
) -> None:
    out = translate_sentences(short_outputs, lines)
    assert len(out) == len(lines)
    for line, translation in zip(lines, out, strict=True):
        # A text's line breaks are kept, one line out per line in; a line holds no other break.
        if line.strip():
            assert translation.count("\n") == line.count("\n")
            lf = translation.replace("\r\n", "\n") + "."  # no \r, U+2028...: only \n breaks
            assert len(lf.splitlines()) == len(lf.split("\n"))
        else:
            assert translation == ""
        # batching changes nothing: each line alone translates the same
        assert translate_sentences(short_outputs, [line]) == [translation]


def test_translate_lone_surrogates(loaded: LoadedModel) -> None:
    """Python decodes non-UTF-8 bytes in argv to lone surrogates: 'caff\\xe8' -> 'caff\\udce8'."""
    out = translate_sentences(loaded, ["caff\udce8 one", "two"])
    assert out == translate_sentences(loaded, ["caff\ufffd one", "two"])  # U+FFFD in its place


# --------------------------------------------------------------------------- the tokenizer

SENTENCES = ["the red cat is big .", "il gatto rosso è grande .", "l' uomo , la casa !"]
TOKENIZER = train_tokenizer(SENTENCES, min_freq=1)
# The words the tokenizer knows after a space (it marks those with a leading "▁").
VOCAB = [t[1:] for t in TOKENIZER.get_vocab() if t.startswith("▁") and len(t) > 1]


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_tokenizer_survives_any_unicode(text: str) -> None:
    encoding = TOKENIZER.encode(text)
    size = TOKENIZER.get_vocab_size()
    assert all(0 <= i < size for i in encoding.ids)
    assert all(t in TOKENIZER.get_vocab() for t in encoding.tokens)
    decoded = decode_ids(TOKENIZER, encoding.ids)
    assert isinstance(decoded, str) and "\n" not in decoded
    if not text.strip(" \t\n\r\f\v"):
        assert encoding.ids == []
    # Text that spells a special token ("[SOS]") is read as text, never as the token.
    assert not set(encoding.ids) & {PAD_ID, SOS_ID, EOS_ID}
    # Every piece known: the text comes back, normalised.
    if UNK_ID not in encoding.ids:
        assert decoded == normalize_text(text)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.sampled_from(VOCAB), max_size=20))
def test_known_words_round_trip(words: list[str]) -> None:
    """Text made of known space-separated words encodes without [UNK], one id a word, and
    decodes back to exactly that text."""
    text = " ".join(words)
    ids = TOKENIZER.encode(text).ids
    assert UNK_ID not in ids and len(ids) == len(words)
    assert decode_ids(TOKENIZER, ids) == text


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=200))
def test_detokenize_any_token_list(text: str) -> None:
    words = text.split()
    out = detokenize(words)
    assert out.replace(" ", "") == "".join(words)


# --------------------------------------------------------------------------- paragraphs

SENTENCES = [
    "One cat and two dogs.",
    "The red house is big!",
    "Five cats?",
    "The dog is red.",
    "Mr. Smith and the cat are big.",
    "It is 3.5 dogs.",
]


@pytest.mark.parametrize("k", [3, 6])
def test_a_paragraph_translates_as_its_sentences_one_by_one(loaded: LoadedModel, k: int) -> None:
    """Sentences on one line come back as each one translated alone, joined as they were."""
    alone = [translate_sentences(loaded, [s], beam=2)[0] for s in SENTENCES[:k]]
    assert translate_sentences(loaded, [" ".join(SENTENCES[:k])], beam=2) == [" ".join(alone)]
    pasted = "\n\n".join(SENTENCES[:k])  # a pasted text with blank lines between its sentences
    assert translate_sentences(loaded, [pasted], beam=2) == ["\n\n".join(alone)]


def test_decode_split_sentences_false_gives_the_line_whole(
    loaded: LoadedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from translator.inference import predict, text

    seen: list[int] = []

    def decode(sources: list[list[int]], chars: list[int]) -> list[list[int]]:
        seen.append(len(sources))
        return [[] for _ in sources]

    line = " ".join(SENTENCES[:3])
    for split in (True, False):
        text.translate_texts(
            [line], loaded.src_tokenizer, loaded.tgt_tokenizer, 60, decode, split=split
        )
    assert seen == [3, 1]  # three sentences decoded, then the line as one
    # The key reaches the engine's call.
    splits: list[bool] = []

    def spy(*args, split: bool, **kwargs):  # noqa: ANN002, ANN003, ANN202
        splits.append(split)
        return text.translate_texts(*args, split=split, **kwargs)

    monkeypatch.setattr(predict, "translate_texts", spy)
    off = override_config(loaded.config, None, ["decode.split_sentences=false"], "t")
    translate_sentences(loaded, [line], beam=1)
    translate_sentences(dataclasses.replace(loaded, config=off), [line], beam=1)
    assert splits == [True, False]


def test_the_attention_map_of_a_paragraph_is_its_first_sentence(
    loaded: LoadedModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each sentence is translated alone, so a map of the whole line would show a translation
    that was never given: the map is the first sentence's."""
    from translator.inference import predict

    drawn: list[tuple[list[int], list[int]]] = []

    draw = predict.translation_figure

    def spy(model, src_ids, output, *args):  # noqa: ANN001, ANN002, ANN202
        drawn.append((src_ids, output))
        return draw(model, src_ids, output, *args)

    monkeypatch.setattr(predict, "translation_figure", spy)
    predict.save_attention(loaded, " ".join(SENTENCES[:3]), tmp_path / "all.png")
    predict.save_attention(loaded, SENTENCES[0], tmp_path / "first.png")
    assert drawn[0] == drawn[1]
