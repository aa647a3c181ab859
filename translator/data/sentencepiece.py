"""The `sentencepiece` tokenizer kind: a SentencePiece model of the library itself, with the ids
of the run's vocabulary, encoding and decoding exactly as transformers' `MarianTokenizer` does.

OPUS-MT models (and runs trained here with `tokenizer.kind: sentencepiece`) keep each language's
SentencePiece model (`source.spm`, `target.spm`) apart from the model's vocabulary (`vocab.json`):
the SentencePiece model cuts a text into pieces, the vocabulary gives each piece its id, and a
piece it lacks is the unknown token. Here one JSON file per side (the run's usual
`tokenizer_src.json`) holds both: the SentencePiece model (base64) and the pieces in id order,
the four special tokens first at their fixed ids (translator.specials), so every command reads
it as any tokenizer. `names` keeps the Marian names of the specials for export.

It offers the part of `tokenizers.Tokenizer`'s interface that the tool uses (`encode`,
`encode_batch`, `decode`, `get_vocab`, `token_to_id`, `id_to_token`, `to_str`, `save`).
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from translator.errors import TranslatorError
from translator.specials import EOS, PAD, SOS, SPECIAL_TOKENS, UNK, UNK_ID

HF_EXTRA = 'pip install -e ".[hf]"'
FORMAT = "translator-sentencepiece"
# The Marian names of the specials; [SOS] has none: a Marian decoder starts from <pad>.
MARIAN_NAMES = {UNK: "<unk>", PAD: "<pad>", SOS: "<pad>", EOS: "</s>"}
SPACE = "\u2581"


def import_sentencepiece() -> Any:
    try:
        import sentencepiece
    except ImportError:
        raise TranslatorError(
            f"the sentencepiece tokenizer kind needs the sentencepiece library: {HF_EXTRA}"
        ) from None
    return sentencepiece


@dataclass(frozen=True)
class Encoded:
    """What `encode` gives: the ids (as `tokenizers.Encoding.ids`)."""

    ids: list[int]


class SentencePieceTokenizer:
    """A SentencePiece model with the run's vocabulary (see the module's docstring)."""

    decoder = None
    pre_tokenizer = None
    encode_special_tokens = True  # a text that spells "[SOS]" is never the token

    def __init__(
        self,
        model: bytes,
        pieces: list[str],
        names: dict[str, str] | None = None,
        prefix: str | None = None,
    ) -> None:
        if list(pieces[: len(SPECIAL_TOKENS)]) != list(SPECIAL_TOKENS):
            raise ValueError(f"the first pieces must be {', '.join(SPECIAL_TOKENS)}")
        self.model = model
        self.pieces = list(pieces)
        self.names = dict(names or MARIAN_NAMES)
        self.prefix = prefix
        self.normalizer = None  # set to None by callers that clean text first: nothing to undo
        self._ids = {p: i for i, p in enumerate(self.pieces)}
        self._specials = set(SPECIAL_TOKENS)
        self._processor = import_sentencepiece().SentencePieceProcessor(model_proto=model)
        if prefix is not None and prefix not in self._ids:
            raise ValueError(f"the target-language token {prefix} is not in the vocabulary")

    # ------------------------------------------------------------------ encode / decode

    def encode(self, text: str) -> Encoded:
        """The ids of `text`'s pieces (no [SOS]/[EOS]); a piece the vocabulary lacks is [UNK]."""
        pieces = self._processor.encode(text, out_type=str)
        ids = [self._ids.get(p, UNK_ID) if p not in self._specials else UNK_ID for p in pieces]
        return Encoded([self._ids[self.prefix], *ids] if self.prefix else ids)

    def encode_batch(self, texts: Iterable[str]) -> list[Encoded]:
        return [self.encode(t) for t in texts]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """The text of `ids`: the specials (and unknown ids) dropped, the rest joined by the
        SentencePiece model, as MarianTokenizer's `decode(..., skip_special_tokens=True)`."""
        pieces = [
            self.pieces[i]
            for i in ids
            if 0 <= i < len(self.pieces) and self.pieces[i] not in self._specials
        ]
        return self._processor.decode_pieces(pieces).replace(SPACE, " ").strip()

    # ------------------------------------------------------------------ vocabulary

    def get_vocab(self) -> dict[str, int]:
        return dict(self._ids)

    def get_vocab_size(self) -> int:
        return len(self.pieces)

    def token_to_id(self, token: str) -> int | None:
        return self._ids.get(token)

    def id_to_token(self, i: int) -> str | None:
        return self.pieces[i] if 0 <= i < len(self.pieces) else None

    def marian_vocab(self) -> list[str]:
        """The pieces in id order with the specials under their Marian names."""
        return [self.names.get(p, p) if p in self._specials else p for p in self.pieces]

    # ------------------------------------------------------------------ files

    def to_str(self) -> str:
        spec = {
            "format": FORMAT,
            "version": 1,
            "pieces": self.pieces,
            "names": self.names,
            "prefix": self.prefix,
            "model": base64.b64encode(self.model).decode("ascii"),
        }
        return json.dumps(spec, ensure_ascii=False)

    def save(self, path: str) -> None:
        Path(path).write_text(self.to_str(), encoding="utf-8")

    @classmethod
    def from_str(cls, text: str) -> SentencePieceTokenizer:
        spec = json.loads(text)
        return cls(base64.b64decode(spec["model"]), spec["pieces"], spec["names"], spec["prefix"])


def is_sentencepiece_file(text: str) -> bool:
    """Whether a tokenizer file's text is this kind's (its first bytes name the format)."""
    return text.lstrip().startswith('{"format": "' + FORMAT)


def model_pieces(model: bytes) -> list[str]:
    """Every piece of a SentencePiece model but its control and unknown pieces, in its order."""
    processor = import_sentencepiece().SentencePieceProcessor(model_proto=model)
    return [
        processor.id_to_piece(i)
        for i in range(processor.get_piece_size())
        if not (processor.is_control(i) or processor.is_unknown(i))
    ]


def train_sentencepiece(texts: Iterable[str], vocab_size: int) -> SentencePieceTokenizer:
    """A unigram SentencePiece model trained on `texts` (byte fallback, so no text is [UNK]),
    its vocabulary the specials then its pieces: `vocab_size` ids in all, or fewer when the
    texts hold fewer pieces."""
    spm = import_sentencepiece()
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size - len(SPECIAL_TOKENS) + 2,  # its own <unk> and </s> are ours
        character_coverage=1.0,
        byte_fallback=True,
        hard_vocab_limit=False,
        unk_id=0,
        eos_id=1,
        bos_id=-1,
        pad_id=-1,
        num_threads=2,
        minloglevel=2,
    )
    data = model.getvalue()
    return SentencePieceTokenizer(data, [*SPECIAL_TOKENS, *model_pieces(data)])
