"""Tokenizer: fixed special ids, save/load round trip, min_freq, decoding ids back to text."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_pairs
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from translator.tokenizer import (
    EOS,
    EOS_ID,
    PAD,
    PAD_ID,
    SOS,
    SOS_ID,
    UNK,
    UNK_ID,
    check_special_ids,
    decode_ids,
    detokenize,
    fingerprint,
    load_tokenizer,
    save_tokenizer,
    train_tokenizer,
)

SENTENCES = [
    "il gatto è rosso .",
    "il cane è grande , e la casa è rossa !",
    "l'uomo vede il gatto .",
    "dov'è il cane ?",
    "il gatto e il cane .",
]


def test_special_ids_are_the_documented_constants() -> None:
    assert (UNK_ID, PAD_ID, SOS_ID, EOS_ID) == (0, 1, 2, 3)
    assert (UNK, PAD, SOS, EOS) == ("[UNK]", "[PAD]", "[SOS]", "[EOS]")


@pytest.mark.parametrize("min_freq", [1, 2, 5])
@pytest.mark.parametrize("side", [0, 1])
def test_trained_tokenizers_have_fixed_special_ids(min_freq: int, side: int) -> None:
    tok = train_tokenizer((p[side] for p in make_pairs(200, seed=side)), min_freq=min_freq)
    for token, expected in ((UNK, 0), (PAD, 1), (SOS, 2), (EOS, 3)):
        assert tok.token_to_id(token) == expected
        assert tok.id_to_token(expected) == token
    # Ordinary words never take a special id.
    words = {w for p in make_pairs(200, seed=side) for w in p[side].split()}
    assert all(tok.token_to_id(w) is None or tok.token_to_id(w) > EOS_ID for w in words)


def test_special_ids_survive_an_empty_corpus() -> None:
    tok = train_tokenizer([], min_freq=1)
    check_special_ids(tok)
    assert tok.get_vocab_size() == 4


def test_save_load_round_trip(tmp_path: Path) -> None:
    tok = train_tokenizer(SENTENCES, min_freq=1)
    path = tmp_path / "tok.json"
    save_tokenizer(tok, path)
    assert path.is_file() and not path.with_name("tok.json.tmp").exists()
    loaded = load_tokenizer(path)
    assert fingerprint(loaded) == fingerprint(tok)
    assert loaded.get_vocab() == tok.get_vocab()
    probe = [*SENTENCES, "una frase con parole nuove , mai viste !"]
    assert [e.ids for e in loaded.encode_batch(probe)] == [e.ids for e in tok.encode_batch(probe)]


def test_fingerprint_tells_vocabularies_apart() -> None:
    a = train_tokenizer(SENTENCES, min_freq=1)
    b = train_tokenizer([*SENTENCES, "una parola in più"], min_freq=1)
    assert fingerprint(a) == fingerprint(train_tokenizer(SENTENCES, min_freq=1))
    assert fingerprint(a) != fingerprint(b)


def test_load_rejects_a_tokenizer_with_other_special_ids(tmp_path: Path) -> None:
    foreign = Tokenizer(WordLevel({"[PAD]": 0, "[UNK]": 1, "[SOS]": 2, "[EOS]": 3}, unk_token=UNK))
    foreign.pre_tokenizer = Whitespace()
    path = tmp_path / "foreign.json"
    foreign.save(str(path))
    with pytest.raises(ValueError, match=r"\[UNK\] has id 1, expected 0"):
        load_tokenizer(path)


def test_min_freq_sends_rare_words_to_unk() -> None:
    sentences = ["common common common rare", "common frequent frequent"]
    tok = train_tokenizer(sentences, min_freq=2)
    vocab = tok.get_vocab()
    assert "common" in vocab and "frequent" in vocab
    assert "rare" not in vocab
    ids = tok.encode("common rare frequent unseen").ids
    assert ids == [vocab["common"], UNK_ID, vocab["frequent"], UNK_ID]
    # With min_freq 1 the rare word is kept.
    assert "rare" in train_tokenizer(sentences, min_freq=1).get_vocab()


def test_max_vocab_caps_the_vocabulary_including_specials() -> None:
    sentences = ["a b c d e f g h", "a b c d", "a b", "a"]
    tok = train_tokenizer(sentences, min_freq=1, max_vocab=6)
    assert tok.get_vocab_size() == 6
    check_special_ids(tok)
    assert {"a", "b"} <= set(tok.get_vocab())  # the most frequent words are the ones kept


def test_decode_ids_stops_at_eos_skips_pad_and_sos_keeps_unk() -> None:
    tok = train_tokenizer(SENTENCES, min_freq=1)
    v = tok.get_vocab()
    ids = [SOS_ID, v["il"], PAD_ID, UNK_ID, v["è"], v["rosso"], v["."], EOS_ID, v["cane"], v["?"]]
    assert decode_ids(tok, ids) == "il [UNK] è rosso."
    assert decode_ids(tok, [EOS_ID, v["il"]]) == ""
    assert decode_ids(tok, []) == ""


def test_decode_ids_inverts_encoding_of_tokenized_text() -> None:
    tok = train_tokenizer(SENTENCES, min_freq=1)
    for text in (
        "il gatto è rosso.",
        "il cane è grande, e la casa è rossa!",
        "l'uomo vede il gatto.",
    ):
        assert decode_ids(tok, [SOS_ID, *tok.encode(text).ids, EOS_ID]) == text


def test_decode_ids_out_of_range_id_becomes_unk() -> None:
    tok = train_tokenizer(SENTENCES, min_freq=1)
    assert decode_ids(tok, [tok.get_vocab()["il"], 10_000]) == "il [UNK]"


@pytest.mark.parametrize(
    ("words", "text"),
    [
        (["ciao", ",", "mondo", "!"], "ciao, mondo!"),
        (["l", "'", "uomo", "è", "qui", "."], "l'uomo è qui."),
        (["dov", "'", "è", "il", "cane", "?"], "dov'è il cane?"),
        (["«", "ciao", "»", ",", "disse", "(", "lui", ")", "."], "«ciao», disse (lui)."),
        (["davvero", "?!"], "davvero?!"),
        (["il", "50", "%"], "il 50%"),
        ([",", "a"], ", a"),
        ([], ""),
    ],
)
def test_detokenize_closes_up_punctuation_and_elisions(words: list[str], text: str) -> None:
    assert detokenize(words) == text
