"""Tokenizer: fixed special ids, save/load round trip, min_freq, decoding ids back to text, and
BPE-dropout changing the pieces, never the text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import make_pairs
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from translator.data.tokenizer import (
    check_special_ids,
    decode_ids,
    detokenize,
    fingerprint,
    load_tokenizer,
    normalize_text,
    save_tokenizer,
    tokenizer_kind,
    train_tokenizer,
    with_bpe_dropout,
)
from translator.specials import EOS, EOS_ID, PAD, PAD_ID, SOS, SOS_ID, SPECIAL_TOKENS, UNK, UNK_ID

KINDS = ["word", "bpe", "unigram"]

SENTENCES = [
    "il gatto è rosso.",
    "il cane è grande, e la casa è rossa!",
    "l'uomo vede il gatto.",
    "dov'è il cane?",
    "il gatto e il cane.",
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
    assert all(tok.token_to_id("▁" + w) is None or tok.token_to_id("▁" + w) > EOS_ID for w in words)
    assert any(tok.token_to_id("▁" + w) is not None for w in words)


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
    assert "▁common" in vocab and "▁frequent" in vocab
    assert "▁rare" not in vocab
    ids = tok.encode("common rare frequent unseen").ids
    assert ids == [vocab["▁common"], UNK_ID, vocab["▁frequent"], UNK_ID]
    # With min_freq 1 the rare word is kept.
    assert "▁rare" in train_tokenizer(sentences, min_freq=1).get_vocab()


def test_max_vocab_caps_the_vocabulary_including_specials() -> None:
    sentences = ["a b c d e f g h", "a b c d", "a b", "a"]
    tok = train_tokenizer(sentences, min_freq=1, max_vocab=6)
    assert tok.get_vocab_size() == 6
    check_special_ids(tok)
    assert {"▁a", "▁b"} <= set(tok.get_vocab())  # the most frequent words are the ones kept


def test_decode_ids_stops_at_eos_skips_pad_and_sos_keeps_unk() -> None:
    tok = train_tokenizer(SENTENCES, min_freq=1)
    v = tok.get_vocab()
    ids = [SOS_ID, v["▁il"], PAD_ID, UNK_ID, v["▁è"], v["▁rosso"], v["."], EOS_ID, v["▁cane"]]
    assert decode_ids(tok, ids) == "il [UNK] è rosso."
    assert decode_ids(tok, [EOS_ID, v["▁il"]]) == ""
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
    assert decode_ids(tok, [tok.get_vocab()["▁il"], 10_000]) == "il [UNK]"


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


def test_a_word_level_tokenizer_saved_before_decoders_still_decodes(tmp_path: Path) -> None:
    """Runs trained before tokenizers carried a decoder: decode_ids falls back to detokenize."""
    old = Tokenizer(
        WordLevel(
            {t: i for i, t in enumerate([*SPECIAL_TOKENS, "l", "'", "uomo", "."])}, unk_token=UNK
        )
    )
    old.pre_tokenizer = Whitespace()
    path = tmp_path / "old.json"
    old.save(str(path))
    tok = load_tokenizer(path)
    assert tok.decoder is None
    assert decode_ids(tok, tok.encode("l'uomo .").ids) == "l'uomo."


# --------------------------------------------------------------------------- lossless text

# Each case is a detokenisation that the old Whitespace pre-tokenizer got wrong.
ROUND_TRIP_CASES = [
    "un po' di pane",
    "È un bel giorno, vero?",
    "Costa 3.5 euro alle 10:30.",
    '"Ciao", disse.',
    "Mandami una e-mail, Tom!",
    "Dov'è l'uomo?",
    "«Sì» — rispose (forse)...",
    "50% più 2+2=4 #1 @casa",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("text", ROUND_TRIP_CASES)
def test_known_text_round_trips_through_every_kind(kind: str, text: str) -> None:
    tok = train_tokenizer([*ROUND_TRIP_CASES, *SENTENCES] * 3, min_freq=1, max_vocab=400, kind=kind)
    ids = tok.encode(text).ids
    assert UNK_ID not in ids
    assert decode_ids(tok, [SOS_ID, *ids, EOS_ID]) == text


# Not unigram: its vocabulary holds the special tokens as pieces, which its segmentation prefers.
@pytest.mark.parametrize("kind", ["word", "bpe"])
def test_text_spelling_a_special_token_is_read_as_text(kind: str, tmp_path: Path) -> None:
    trained = train_tokenizer(SENTENCES * 3, min_freq=1, max_vocab=400, kind=kind)
    save_tokenizer(trained, tmp_path / "tok.json")
    for tok in (trained, load_tokenizer(tmp_path / "tok.json")):
        ids = tok.encode(f"il gatto {SOS} {EOS} {PAD} {UNK}").ids
        assert not set(ids) & {PAD_ID, SOS_ID, EOS_ID}
        if kind != "word":  # the word kind has no pieces to spell "[SOS]" with: [UNK]s
            assert UNK_ID not in ids
            assert decode_ids(tok, ids) == f"il gatto {SOS} {EOS} {PAD} {UNK}"


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
def test_subwords_never_give_unk_even_for_unseen_characters(kind: str) -> None:
    tok = train_tokenizer(SENTENCES * 5, min_freq=1, max_vocab=400, kind=kind)
    text = "Zoë mangia 寿司 🍣 a Ålesund"
    ids = tok.encode(text).ids
    assert UNK_ID not in ids
    assert decode_ids(tok, ids) == text


SUBWORD_TOKENIZERS = {
    kind: train_tokenizer([*SENTENCES, *ROUND_TRIP_CASES] * 5, min_freq=1, max_vocab=400, kind=kind)
    for kind in ("bpe", "unigram")
}


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=60), kind=st.sampled_from(["bpe", "unigram"]))
@example(text="[UNK]", kind="unigram")  # the unigram vocabulary held the specials as pieces
@example(text="x [SOS] y [EOS] [PAD]", kind="unigram")
@example(text="[UNK] [SOS] [EOS] [PAD]", kind="bpe")
def test_subword_decode_inverts_encode_for_any_normalized_text(text: str, kind: str) -> None:
    """decode(encode(s)) == s for every string, after the project's normalisation; no text
    encodes to a special token."""
    tok = SUBWORD_TOKENIZERS[kind]
    text = normalize_text(text)
    ids = tok.encode(text).ids
    assert not set(ids) & {UNK_ID, PAD_ID, SOS_ID, EOS_ID}
    assert decode_ids(tok, ids) == text


@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(
            ["il", "gatto", "è", "rosso", ".", ",", "'", "l", "uomo", "?", "3", ":", "-", '"']
        ),
        max_size=12,
    ),
    spaces=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_word_decode_restores_the_spaces_that_were_there(
    words: list[str], spaces: list[bool]
) -> None:
    """Known words joined with or without spaces come back exactly as written."""
    tok = WORD_TOKENIZER
    text = normalize_text(
        "".join((" " if sp else "") + w for w, sp in zip(words, spaces, strict=False))
    )
    ids = tok.encode(text).ids
    if UNK_ID in ids:  # a glued run such as "gatto." + "il" made a word the vocabulary lacks
        return
    assert decode_ids(tok, ids) == text


WORD_TOKENIZER = train_tokenizer(
    ["il gatto è rosso . , ' l uomo ? 3 : - \"", "il.gatto,è'rosso?3:-\"l"] * 2, min_freq=1
)


@pytest.mark.parametrize("kind", KINDS)
def test_a_saved_tokenizer_decodes_on_its_own(kind: str, tmp_path: Path) -> None:
    """Tokenizer.from_file(p).decode(ids) alone gives the text back: normalizer, pre-tokenizer
    and decoder travel in the JSON file."""
    tok = train_tokenizer(SENTENCES * 3, min_freq=1, max_vocab=400, kind=kind)
    save_tokenizer(tok, tmp_path / "tok.json")
    plain = Tokenizer.from_file(str(tmp_path / "tok.json"))
    text = "il  cane\tè rosso."  # whitespace runs: the normalizer makes them one space
    assert plain.decode(plain.encode(text).ids) == "il cane è rosso."
    assert tokenizer_kind(plain) == kind


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
def test_subword_vocabulary_size_is_respected(kind: str) -> None:
    tok = train_tokenizer(
        [*SENTENCES, *ROUND_TRIP_CASES] * 20, min_freq=1, max_vocab=350, kind=kind
    )
    assert tok.get_vocab_size() <= 350
    check_special_ids(tok)


@pytest.mark.parametrize("kind", ["word", "bpe", "unigram"])
def test_special_token_strings_in_user_text_are_text_for_both_engines(
    kind: str, tmp_path: Path
) -> None:
    """`encode_sources` feeds both engines (PyTorch and CTranslate2): the text "[SOS]" must not
    become the token [SOS], nor "[PAD]" padding, nor "[EOS]" an early end."""
    from translator.inference.text import encode_sources

    tok = train_tokenizer([*SENTENCES, "x [UNK] [SOS] [EOS] [PAD]"] * 5, 1, 400, kind)
    save_tokenizer(tok, tmp_path / "t.json")
    loaded = load_tokenizer(tmp_path / "t.json")
    text = "il [UNK] gatto [SOS] è [EOS] rosso [PAD]"
    (encoded,) = encode_sources(loaded, [text], 100)
    assert encoded[0] == SOS_ID and encoded[-1] == EOS_ID
    assert not set(encoded[1:-1]) & {PAD_ID, SOS_ID, EOS_ID, UNK_ID}
    assert decode_ids(loaded, encoded) == text


def test_a_unigram_file_saved_before_the_mend_is_mended_as_it_loads(tmp_path: Path) -> None:
    tok = train_tokenizer(SENTENCES * 5, 1, 400, "unigram")
    spec = json.loads(tok.to_str())
    spec["pre_tokenizer"] = spec["pre_tokenizer"]["pretokenizers"][0]  # as files were before
    old = tmp_path / "old.json"
    old.write_text(json.dumps(spec), encoding="utf-8")
    assert Tokenizer.from_file(str(old)).encode("[SOS]").ids[-1] == SOS_ID  # the old fault
    mended = load_tokenizer(old)
    assert SOS_ID not in mended.encode("[SOS]").ids
    assert fingerprint(mended) == fingerprint(tok)  # the same vocabulary: checkpoints still fit


def test_dropout_changes_the_pieces_never_the_text() -> None:
    texts = [s for pair in make_pairs(300) for s in pair]
    plain = train_tokenizer(texts, min_freq=1, max_vocab=320, kind="bpe")
    sentence = "the big red house and seven cats ."
    before = plain.encode(sentence).ids
    dropped = with_bpe_dropout(plain, 0.3)
    segmentations = {tuple(dropped.encode(sentence).ids) for _ in range(50)}
    assert len(segmentations) > 1
    assert all(dropped.decode(list(ids)) == sentence for ids in segmentations)
    assert all(len(ids) >= len(before) for ids in segmentations)  # only merges are skipped
    assert plain.encode(sentence).ids == before  # the original is left as it was
    word = train_tokenizer(texts, min_freq=1, kind="word")
    with pytest.raises(ValueError, match="BPE"):
        with_bpe_dropout(word, 0.1)
