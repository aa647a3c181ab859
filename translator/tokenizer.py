"""Word-level tokenizers: train, save, load; the special tokens and their ids, defined once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.trainers import WordLevelTrainer

UNK, PAD, SOS, EOS = "[UNK]", "[PAD]", "[SOS]", "[EOS]"
SPECIAL_TOKENS = (UNK, PAD, SOS, EOS)
UNK_ID, PAD_ID, SOS_ID, EOS_ID = 0, 1, 2, 3


def train_tokenizer(
    sentences: Iterable[str], min_freq: int = 2, max_vocab: int | None = None
) -> Tokenizer:
    """Train a WordLevel tokenizer with a Whitespace pre-tokenizer on `sentences`."""
    tokenizer = Tokenizer(WordLevel(unk_token=UNK))
    tokenizer.pre_tokenizer = Whitespace()
    trainer = WordLevelTrainer(
        special_tokens=list(SPECIAL_TOKENS),
        min_frequency=min_freq,
        vocab_size=max_vocab if max_vocab is not None else 10**9,
        show_progress=False,
    )
    tokenizer.train_from_iterator(sentences, trainer=trainer)
    check_special_ids(tokenizer)
    return tokenizer


def check_special_ids(tokenizer: Tokenizer, where: str = "tokenizer") -> None:
    """Fail if the special tokens do not have their fixed ids."""
    for token, expected in zip(SPECIAL_TOKENS, (UNK_ID, PAD_ID, SOS_ID, EOS_ID), strict=True):
        found = tokenizer.token_to_id(token)
        if found != expected:
            raise ValueError(f"{where}: special token {token} has id {found}, expected {expected}")


def save_tokenizer(tokenizer: Tokenizer, path: Path) -> None:
    """Write the tokenizer as JSON, atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tokenizer.save(str(tmp))
    tmp.replace(path)


def load_tokenizer(path: Path) -> Tokenizer:
    """Load a tokenizer saved by `save_tokenizer`."""
    tokenizer = Tokenizer.from_file(str(path))
    check_special_ids(tokenizer, str(path))
    return tokenizer


def fingerprint(tokenizer: Tokenizer) -> str:
    """A short hash of the vocabulary, stored in checkpoints to catch mismatched tokenizers."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    text = "\n".join(token for token, _ in vocab)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def decode_ids(tokenizer: Tokenizer, ids: Iterable[int]) -> str:
    """Turn output ids into text, stopping at [EOS]; [UNK] stays visible, other specials vanish."""
    words = []
    for i in ids:
        if i == EOS_ID:
            break
        if i in (PAD_ID, SOS_ID):
            continue
        words.append(tokenizer.id_to_token(i) or UNK)
    return detokenize(words)


_NO_SPACE_BEFORE = set(".,!?;:)]}»%'’")
_NO_SPACE_AFTER = set("([{«'’¿¡")


def detokenize(words: list[str]) -> str:
    """Join word tokens with spaces, closing up punctuation and elisions (l ' uomo -> l'uomo)."""
    out = ""
    for word in words:
        closes = all(c in _NO_SPACE_BEFORE for c in word)
        if out and not closes and out[-1] not in _NO_SPACE_AFTER:
            out += " "
        out += word
    return out
