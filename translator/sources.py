"""Encoder inputs from text, without torch: shared by the PyTorch and the CTranslate2 engines."""

from __future__ import annotations

import logging
import re

from tokenizers import Tokenizer

from translator.tokenizer import EOS_ID, SOS_ID

log = logging.getLogger("translator")
_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_sources(
    tokenizer: Tokenizer, sentences: list[str], max_tokens: int, first_line: int = 1
) -> list[list[int]]:
    """Encoder inputs [SOS] words [EOS]; a sentence over `max_tokens` words is cut, with a warning.

    Words the tokenizer does not know become [UNK].
    """
    # Undecodable bytes in command-line arguments arrive as lone surrogates; make them U+FFFD.
    sentences = [_SURROGATE.sub("\ufffd", s) for s in sentences]
    encoded = []
    for n, enc in enumerate(tokenizer.encode_batch(sentences)):
        ids = enc.ids
        if len(ids) > max_tokens:
            log.warning(
                "warning: line %d has %d words, more than the model's maximum of %d; "
                "only its first %d are translated",
                first_line + n,
                len(ids),
                max_tokens,
                max_tokens,
            )
            ids = ids[:max_tokens]
        encoded.append([SOS_ID, *ids, EOS_ID])
    return encoded
