"""Tokenizer figures on the real files: exact round trips, [UNK] and tokens per sentence.

    python scripts/bench_tokenizers.py [--data ../shared/data/en-it/opensubs.jsonl]
        [--dev ../shared/data/en-it/tatoeba-dev.jsonl] [--vocab-size 8000]

Each kind is trained on the corpus side it encodes (8,000 entries), then the dev set's lines are
encoded and decoded. `round_trip` counts the lines, among those with no [UNK], that decode back
to exactly the (normalised) line; `word_old` is the Whitespace pre-tokenizer with the rule-based
detokenizer used before.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench_common import DEFAULT_DATA, print_figures
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from translator.data.tokenizer import decode_ids, detokenize, normalize_text, train_tokenizer
from translator.specials import SPECIAL_TOKENS, UNK_ID

DEFAULT_DEV = DEFAULT_DATA.with_name("tatoeba-dev.jsonl")


def read_side(path: Path, lang: str) -> list[str]:
    with path.open(encoding="utf-8") as f:
        lines = [normalize_text(json.loads(line)["translation"][lang]) for line in f]
    return [line for line in lines if line]


def old_word_tokenizer(lines: list[str], size: int) -> Tokenizer:
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(
        vocab_size=size, min_frequency=2, special_tokens=list(SPECIAL_TOKENS), show_progress=False
    )
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--dev", type=Path, default=DEFAULT_DEV)
    parser.add_argument("--vocab-size", type=int, default=8000)
    args = parser.parse_args()
    figures: dict[str, object] = {}
    for lang in ("en", "it"):
        corpus, dev = read_side(args.data, lang), read_side(args.dev, lang)
        for kind in ("word_old", "word", "bpe", "unigram"):
            if kind == "word_old":
                tok = old_word_tokenizer(corpus, args.vocab_size)
            else:
                tok = train_tokenizer(corpus, 2, args.vocab_size, kind)  # type: ignore[arg-type]
            encoded = tok.encode_batch(dev)
            known = [(s, e) for s, e in zip(dev, encoded, strict=True) if UNK_ID not in e.ids]
            if kind == "word_old":
                exact = sum(detokenize(e.tokens) == s for s, e in known)
            else:
                exact = sum(decode_ids(tok, e.ids) == s for s, e in known)
            tokens = [len(e.ids) for e in encoded]
            unk = sum(e.ids.count(UNK_ID) for e in encoded)
            key = f"{lang}_{kind}"
            figures[f"{key}_round_trip"] = exact / max(1, len(known))
            figures[f"{key}_lines_without_unk"] = len(known) / len(dev)
            figures[f"{key}_unk_token_share"] = unk / sum(tokens)
            figures[f"{key}_tokens_per_sentence"] = sum(tokens) / len(dev)
    print_figures(figures)


if __name__ == "__main__":
    main()
