"""Tokenizers: train, save, load (the special tokens and their ids are in translator.specials).

Three kinds, all from the `tokenizers` library, each saved as one JSON file that carries its own
normalizer, pre-tokenizer and decoder, so `tokenizers.Tokenizer.from_file(p).decode(ids)` alone
turns ids back into text:

- `word`: WordLevel. Words and punctuation runs are split apart, and a word that followed a space
  is marked with a leading "▁" (as SentencePiece does), so decoding puts back exactly the spaces
  that were there: "un po' di" and "10:30" come back as written. Unknown words become [UNK].
- `bpe`: byte-level BPE. Every text encodes without [UNK] (any byte is a token) and decodes back
  to itself.
- `unigram`: SentencePiece-style Unigram over "▁"-marked words, with byte fallback for characters
  it never saw, so it has no [UNK] either.

A fourth, `sentencepiece`, is the SentencePiece library's own model, as OPUS-MT (Marian) models
use it (translator.data.sentencepiece); the functions here take it as they take the others.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from translator.data.sentencepiece import (
    SentencePieceTokenizer,
    is_sentencepiece_file,
    train_sentencepiece,
)
from translator.durable import publish_file, temp_name
from translator.specials import EOS_ID, PAD_ID, SOS_ID, SPECIAL_TOKENS, UNK, UNK_ID

TokenizerKind = Literal["word", "bpe", "unigram", "sentencepiece"]
SPACE = "▁"  # U+2581, marks a token that followed a space (word, unigram)
N_BYTES = 256  # byte-fallback pieces <0x00>..<0xFF> added to a unigram vocabulary


def text_normalizer() -> normalizers.Normalizer:
    """The normalisation every tokenizer applies first: Unicode NFC, single spaces, no ends."""
    return normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    )


def normalize_text(text: str) -> str:
    """`text` as the tokenizers see it (NFC, whitespace runs made one space, stripped)."""
    return _NORMALIZER.normalize_str(text)


_NORMALIZER = text_normalizer()


def train_tokenizer(
    sentences: Iterable[str],
    min_freq: int = 2,
    max_vocab: int | None = None,
    kind: TokenizerKind = "word",
) -> Tokenizer:
    """Train a tokenizer of `kind` on `sentences`.

    `max_vocab` caps the vocabulary (specials included); for `bpe` and `unigram` it is the size to
    reach. `min_freq` is the fewest occurrences a word (or merged pair) needs.
    """
    specials = list(SPECIAL_TOKENS)
    if kind == "sentencepiece":
        return train_sentencepiece(sentences, max_vocab or 8000)  # type: ignore[return-value]
    if kind == "word":
        tokenizer = Tokenizer(models.WordLevel(unk_token=UNK))
        tokenizer.pre_tokenizer = _spaced_words()
        tokenizer.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always")
        trainer = trainers.WordLevelTrainer(
            special_tokens=specials,
            min_frequency=min_freq,
            vocab_size=max_vocab if max_vocab is not None else 10**9,
            show_progress=False,
        )
    elif kind == "bpe":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        # ByteLevel puts a space before the first word; the decoder takes exactly that one away
        tokenizer.decoder = decoders.Sequence([decoders.ByteLevel(), decoders.Strip(" ", 1, 0)])
        trainer = trainers.BpeTrainer(
            vocab_size=max_vocab or 8000,
            min_frequency=min_freq,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    elif kind == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(  # "[" alone: see _specials_only_by_id
            [pre_tokenizers.Metaspace(replacement=SPACE), pre_tokenizers.Split("[", "isolated")]
        )
        tokenizer.decoder = decoders.Sequence(
            [decoders.ByteFallback(), decoders.Metaspace(replacement=SPACE)]
        )
        trainer = trainers.UnigramTrainer(
            vocab_size=max(len(specials) + 1, (max_vocab or 8000) - N_BYTES),
            special_tokens=specials,
            unk_token=UNK,
            show_progress=False,
        )
    else:
        raise ValueError(f"unknown tokenizer kind {kind!r}")
    tokenizer.normalizer = text_normalizer()
    tokenizer.train_from_iterator(sentences, trainer=trainer)
    if kind == "unigram":
        tokenizer = _specials_only_by_id(_with_byte_fallback(tokenizer))
    check_special_ids(tokenizer)
    tokenizer.encode_special_tokens = True
    return tokenizer


def _spaced_words() -> pre_tokenizers.PreTokenizer:
    """Mark spaces with ▁, then split into words and punctuation runs, each keeping its ▁."""
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=False),
            pre_tokenizers.Split(
                Regex(rf"{SPACE}?\w+|{SPACE}?[^\w\s{SPACE}]+|{SPACE}+"), behavior="isolated"
            ),
        ]
    )


def _with_byte_fallback(tokenizer: Tokenizer) -> Tokenizer:
    """A trained Unigram tokenizer plus one piece per byte, used for characters it never saw."""
    spec = json.loads(tokenizer.to_str())
    model = spec["model"]
    lowest = min((score for _, score in model["vocab"]), default=0.0)
    model["vocab"] += [[f"<0x{b:02X}>", lowest - 10.0] for b in range(N_BYTES)]
    model["byte_fallback"] = True
    return Tokenizer.from_str(json.dumps(spec))


_OPEN_BRACKET = {"type": "Split", "pattern": {"String": "["}, "behavior": "Isolated",
                 "invert": False}  # fmt: skip


def _specials_only_by_id(tokenizer: Tokenizer) -> Tokenizer:
    """A unigram tokenizer that no text can make a special token of: its vocabulary holds them
    as pieces (the trainer puts them there, scored above every real piece, so the text "[SOS]"
    was the token [SOS]); a "[" split off before the model segments leaves no word that starts
    like one. Other kinds, and a tokenizer that has the split already, come back as they are."""
    spec = json.loads(tokenizer.to_str())
    pre = spec["pre_tokenizer"]
    if spec["model"]["type"] != "Unigram" or pre.get("type") != "Metaspace":
        return tokenizer
    spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [pre, _OPEN_BRACKET]}
    return copy_tokenizer(tokenizer, json.dumps(spec))


def with_bpe_dropout(tokenizer: Tokenizer, rate: float) -> Tokenizer:
    """A copy of a BPE tokenizer that skips each merge with probability `rate` (BPE-dropout,
    Provilkov et al. 2020): the same text in other, smaller pieces each time. For encoding
    training pairs only; the draws are the tokenizers library's own, not seeded."""
    spec = json.loads(tokenizer.to_str())
    if spec["model"]["type"] != "BPE":
        raise ValueError(f"BPE-dropout needs a BPE tokenizer, not {spec['model']['type']}")
    spec["model"]["dropout"] = rate
    return copy_tokenizer(tokenizer, json.dumps(spec))


def copy_tokenizer(tokenizer: Tokenizer, spec: str | None = None) -> Tokenizer:
    """A separate copy of `tokenizer` (built from `spec`, its JSON, when given), with the
    special-token setting that `to_str()` leaves out."""
    if isinstance(tokenizer, SentencePieceTokenizer):
        return SentencePieceTokenizer.from_str(spec or tokenizer.to_str())  # type: ignore[return-value]
    copy = Tokenizer.from_str(spec if spec is not None else tokenizer.to_str())
    copy.encode_special_tokens = tokenizer.encode_special_tokens
    return copy


def tokenizer_kind(tokenizer: Tokenizer) -> str:
    """`word`, `bpe`, `unigram` or `sentencepiece`; `word` also for runs saved before subwords
    existed."""
    if isinstance(tokenizer, SentencePieceTokenizer):
        return "sentencepiece"
    model = json.loads(tokenizer.to_str())["model"]["type"]
    return {"WordLevel": "word", "BPE": "bpe", "Unigram": "unigram"}[model]


def check_special_ids(tokenizer: Tokenizer, where: str = "tokenizer") -> None:
    """Fail if the special tokens do not have their fixed ids."""
    for token, expected in zip(SPECIAL_TOKENS, (UNK_ID, PAD_ID, SOS_ID, EOS_ID), strict=True):
        found = tokenizer.token_to_id(token)
        if found != expected:
            raise ValueError(f"{where}: special token {token} has id {found}, expected {expected}")


def save_tokenizer(tokenizer: Tokenizer, path: Path) -> None:
    """Write the tokenizer as JSON, atomically."""
    tmp = temp_name(path)
    tokenizer.save(str(tmp))
    publish_file(tmp, path)


def load_tokenizer(path: Path) -> Tokenizer:
    """Load a tokenizer saved by `save_tokenizer`.

    Text that spells a special token ("[SOS]") is read as text, not as the token itself: the
    setting is not saved in the file, so it is made here and in `train_tokenizer`; and a unigram
    vocabulary, which holds the special tokens as pieces too, gets them scored out of reach
    (files saved before that are mended as they load; the ids stay).
    """
    text = Path(path).read_text(encoding="utf-8")
    if is_sentencepiece_file(text):
        sp = SentencePieceTokenizer.from_str(text)
        check_special_ids(sp, str(path))  # type: ignore[arg-type]
        return sp  # type: ignore[return-value]
    tokenizer = _specials_only_by_id(Tokenizer.from_str(text))
    check_special_ids(tokenizer, str(path))
    tokenizer.encode_special_tokens = True
    return tokenizer


def fingerprint(tokenizer: Tokenizer) -> str:
    """A short hash of the vocabulary, stored in checkpoints to catch mismatched tokenizers."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    text = "\n".join(token for token, _ in vocab)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def decode_ids(tokenizer: Tokenizer, ids: Iterable[int]) -> str:
    """Turn output ids into text, stopping at [EOS]; [UNK] stays visible, other specials vanish
    (the sentencepiece kind drops [UNK] too, as MarianTokenizer does)."""
    if isinstance(tokenizer, SentencePieceTokenizer):
        ids = list(ids)
        return tokenizer.decode(ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids)
    kept = []
    for i in ids:
        if i == EOS_ID:
            break
        if i not in (PAD_ID, SOS_ID):
            kept.append(i if tokenizer.id_to_token(i) is not None else UNK_ID)
    if tokenizer.decoder is None:  # a word-level run saved before tokenizers had decoders
        return detokenize([tokenizer.id_to_token(i) for i in kept])
    # The decoder cannot place an [UNK] (the spacing of the unknown word was lost): decode the
    # stretches between them and join them with spaced [UNK]s.
    text: list[str] = []
    segment: list[int] = []
    for i in [*kept, None]:
        if i is None or i == UNK_ID:
            if segment:
                text.append(tokenizer.decode(segment))
            if i is not None:
                text.append(UNK)
            segment = []
        else:
            segment.append(i)
    return " ".join(text)


_NO_SPACE_BEFORE = set(".,!?;:)]}»%'’")
_NO_SPACE_AFTER = set("([{«'’¿¡")


def detokenize(words: list[str]) -> str:
    """Join word tokens with spaces, closing up punctuation and elisions (l ' uomo -> l'uomo).

    Only for word-level tokenizers saved before they carried a decoder of their own.
    """
    out = ""
    for word in words:
        closes = all(c in _NO_SPACE_BEFORE for c in word)
        if out and not closes and out[-1] not in _NO_SPACE_AFTER:
            out += " "
        out += word
    return out
