"""Lossless text on the real files: the shared subtitle corpus and the Tatoeba dev set (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT

from translator.data.tokenizer import decode_ids, normalize_text, train_tokenizer
from translator.specials import UNK_ID

DATA = ROOT.parent / "shared" / "data" / "en-it"
CORPUS, DEV = DATA / "opensubs.jsonl", DATA / "tatoeba-dev.jsonl"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CORPUS.is_file(), reason=f"the shared corpus is not at {CORPUS}"),
]


def read_side(path: Path, lang: str) -> list[str]:
    with path.open(encoding="utf-8") as f:
        lines = [normalize_text(json.loads(line)["translation"][lang]) for line in f]
    return [line for line in lines if line]


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
@pytest.mark.parametrize("lang", ["en", "it"])
def test_every_line_of_corpus_and_dev_set_round_trips(kind: str, lang: str) -> None:
    corpus = read_side(CORPUS, lang)
    tok = train_tokenizer(corpus, min_freq=2, max_vocab=8000, kind=kind)
    lines = corpus + read_side(DEV, lang)
    encoded = tok.encode_batch(lines)
    bad = [(s, decode_ids(tok, e.ids)) for s, e in zip(lines, encoded, strict=True)]
    bad = [(s, d) for s, d in bad if s != d]
    assert not bad, f"{len(bad)} of {len(lines)} lines differ, e.g. {bad[:3]}"
    assert not any(UNK_ID in e.ids for e in encoded)


def test_word_level_round_trips_99_percent_of_the_dev_set() -> None:
    """The Italian dev set through a word-level tokenizer trained on the corpus: of the lines
    with no [UNK], at least 99% decode back to exactly the line."""
    tok = train_tokenizer(read_side(CORPUS, "it"), min_freq=2, max_vocab=8000, kind="word")
    dev = read_side(DEV, "it")
    known = [(s, e) for s, e in zip(dev, tok.encode_batch(dev), strict=True) if UNK_ID not in e.ids]
    exact = sum(decode_ids(tok, e.ids) == s for s, e in known)
    assert len(known) > 500
    assert exact / len(known) >= 0.99, f"{exact} of {len(known)}"
