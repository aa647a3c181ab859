"""Translating with an exported CTranslate2 model directory (`--model DIR`), without torch.

Text goes in and out through the same functions as the PyTorch engine (`encode_sources`,
`decode_ids`), so the two agree on tokenisation and detokenisation.
"""

from __future__ import annotations

import json
import logging
import os
import platform
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from translator.config import Config, apply_override, config_from_dict
from translator.cpu import has_int8_dot_product
from translator.data.casing import load_casing
from translator.data.spelling import load_spelling
from translator.data.tokenizer import decode_ids, load_tokenizer
from translator.errors import CheckpointError, ConfigError, TranslatorError
from translator.inference.mbr import mbr_choice
from translator.inference.text import guard_size, longest_run, run_limit, translate_texts
from translator.run.names import tokenizer_file
from translator.specials import PAD, SOS

log = logging.getLogger("translator")

META_FILE = "translator.json"
FAST_EXTRA = 'pip install -e ".[fast]"'
CT2_BATCH = 32
"""Most sentences per CTranslate2 batch: 815 greedy sentences/s against 699 with 128 (2 workers)."""


def import_ctranslate2() -> Any:
    """The ctranslate2 module, or a one-line error naming the command that installs it."""
    try:
        import ctranslate2
    except ImportError:
        raise TranslatorError(
            f"CTranslate2 is not installed; install it with: {FAST_EXTRA} "
            "(or pip install ctranslate2)"
        ) from None
    return ctranslate2


@dataclass
class ExportedModel:
    """An exported model directory ready to translate: CTranslate2 translator and tokenizers."""

    translator: Any  # ctranslate2.Translator
    path: Path
    config: Config
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    src_tokens: list[str]
    tgt_ids: dict[str, int]
    run: str
    step: int
    quantization: str
    compute_type: str = "default"  # "float32": int8 weights widened at load (cpu_compute_type)
    casing: dict[str, str] | None = None  # casing.json, as the run's (None: exported before it)
    spelling: dict[str, int] | None = None  # spelling.json, likewise

    @property
    def arithmetic(self) -> str:
        """The quantization as messages name it: `int8`, or `int8, computed in float32`."""
        if self.compute_type == "default":
            return self.quantization
        return f"{self.quantization}, computed in {self.compute_type}"

    @property
    def max_source_tokens(self) -> int:
        """Longest source the position table takes, in words ([SOS]/[EOS] excluded)."""
        return self.config.model.max_positions - 2


def cpu_compute_type(quantization: str) -> str:
    """How CTranslate2 computes with an export of `quantization` on this CPU.

    int8 products need AVX-512 VNNI or AVX-VNNI on x86. Without them, CTranslate2's oneDNN path
    adds pairs of int8 products in 16 bits, which saturate (an int8 export agreed with float32 on
    38% of greedy outputs, AMD EPYC with AVX2), and its MKL path is slow on AMD: 80 ms per batch of
    15 sentences against 18 ms in float32. So there the int8 weights are widened to float32 at
    load: the file stays small, the arithmetic is float32's.
    """
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    if quantization.startswith("int8") and x86 and not has_int8_dot_product():
        return "float32"
    return "default"


def load_exported(path: Path, threads: int | None = None) -> ExportedModel:
    """Load a directory written by `translator export`."""
    ct2 = import_ctranslate2()
    meta_path = path / META_FILE
    if not meta_path.is_file():
        raise CheckpointError(
            f"--model {path}: no {META_FILE} there; make the directory with translator export"
        )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        config = config_from_dict(meta["config"], origin=str(meta_path))
        src_tok = load_tokenizer(tokenizer_file(path, "src"))
        tgt_path = tokenizer_file(path, "tgt")  # none: one tokenizer for both languages
        if not tgt_path.exists() and not (path / "shared_vocabulary.json").exists():
            raise CheckpointError(
                f"--model {path}: no tokenizer_tgt.json, and the model has two vocabularies; "
                "export it again"
            )
        tgt_tok = load_tokenizer(tgt_path) if tgt_path.exists() else src_tok
        threads = threads or int(os.environ.get("OMP_NUM_THREADS", 0) or 0) or os.cpu_count()
        quantization = str(meta.get("quantization", "?"))
        compute = cpu_compute_type(quantization)
        # One worker per core, each on one thread, decoding different batches side by side: 2.2x
        # the sentences/s of one worker on two threads (bench_decode.py, cpu.yaml model, int8).
        translator = ct2.Translator(
            str(path),
            device="cpu",
            inter_threads=threads or 1,
            intra_threads=1,
            compute_type=compute,
        )
    except Exception as exc:  # anything unreadable in the directory: one line, not a trace
        if isinstance(exc, TranslatorError):
            raise
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(
            f"--model {path}: not a readable exported model ({first}); export it again"
        ) from None
    src_vocab = {i: t for t, i in src_tok.get_vocab().items()}
    src_tokens = [src_vocab[i] for i in range(len(src_vocab))]
    tgt_ids = dict(tgt_tok.get_vocab())
    return ExportedModel(
        translator,
        path,
        config,
        src_tok,
        tgt_tok,
        src_tokens,
        tgt_ids,
        str(meta.get("run", path.name)),
        int(meta.get("step", 0)),
        quantization,
        compute,
        load_casing(path),
        load_spelling(path),
    )


def output_limit(n_source_words: int, config: Config) -> int:
    """Output budget a * source_length + b within the position table (as `max_output_lengths`)."""
    dec = config.decode
    limit = int(dec.max_len_a * n_source_words + dec.max_len_b)
    return max(1, min(limit, config.model.max_positions - 1))


def queue_batch(
    model: ExportedModel,
    tokens: list[list[str]],
    max_length: int,
    beam: int,
    guard: int = 0,
    max_run: int = 0,
) -> Any:
    """Queue one batch of source tokens on CTranslate2's workers; its results, one per sentence,
    to wait for. `max_length`: the output budget of the batch's longest sentence; `guard`: the
    repeat guard of its sentences (`guard_size`; 0: off); `max_run`: with it, no token follows
    itself more than that many times in a row (0: CTranslate2 is not asked)."""
    dec = model.config.decode
    # CTranslate2 has no run limit: a run one longer than allowed, of every token, is suppressed.
    # It compares each with each hypothesis at every step, so it is asked only where needed.
    never = [[PAD], [SOS]]  # never an output, as the PyTorch search bans them (an imported
    # Marian model's <pad> is a token of its vocabulary that transformers keeps out likewise)
    runs = never if not max_run else never + [[t] * (max_run + 1) for t in model.tgt_ids]
    return model.translator.translate_batch(
        tokens,
        asynchronous=True,
        beam_size=beam,
        length_penalty=dec.alpha if beam > 1 else 0.0,
        max_decoding_length=max_length,
        max_input_length=0,
        min_decoding_length=0,  # CTranslate2 defaults to 1; ours may end at once
        disable_unk=dec.ban_unk,
        num_hypotheses=beam if dec.mbr else 1,
        no_repeat_ngram_size=guard,
        suppress_sequences=runs,
    )


def decode_exported(
    model: ExportedModel,
    sources: list[list[int]],
    beam: int | None = None,
    source_chars: list[int] | None = None,
) -> list[list[int]]:
    """Output ids (without [SOS]/[EOS]) for encoder inputs, in input order; `source_chars` (each
    source's length as typed) bounds the choice of `decode.mbr` (`mbr.mbr_choice`).

    Sentences of like length go in batches of at most `CT2_BATCH`, all queued at once, so that
    every worker has one to decode; each batch stops at its own longest output budget. A few
    sentences (as `translator serve` sends) are cut in like-length pieces, two per worker,
    longest first: a worker that ends a short piece takes the next while another still decodes a
    long one. A batch that mixes lengths decodes at the pace of its longest sentence, so like
    lengths matter more than batch size (scripts/bench_pieces.py, 2 workers, int8: batches of
    36 served sentences, 2,335 sentences/s in pieces of 9 against 2,169 dealt out in two mixed
    halves; all sorted by length, 3,379 in batches of 32 and 3,160 in batches of 18).
    """
    dec = model.config.decode
    beam = dec.beam if beam is None else beam
    detokenize = partial(decode_ids, model.tgt_tokenizer)  # decode.mbr compares texts
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]), reverse=True)
    workers = model.translator.num_translators
    size = min(dec.batch_size, CT2_BATCH)  # decode.batch_size is at least 1 (config check)
    if workers > 1 and len(order) <= workers * size:
        size = -(-len(order) // (2 * workers))  # two pieces per worker, rounded up
    # The repeat guard is one setting per batch: the rare source that repeats itself goes apart.
    guards = [guard_size(s, dec.no_repeat_ngram) for s in sources]
    groups = [[i for i in order if guards[i] == n] for n in sorted(set(guards))]
    pieces = [
        (group[start : start + size], guards[group[0]])
        for group in groups
        for start in range(0, len(group), size)
    ]
    hypotheses = _decode_pieces(model, sources, pieces, beam)
    # The rare output with too long a run of one token is decoded again, alone, with every such
    # run suppressed: the outputs of a search that bans runs as it goes (greedy: exactly those).
    runs = [run_limit(s, dec.max_run) for s in sources]
    again = [
        ([i], guards[i], runs[i])
        for i, hyps in hypotheses.items()
        if runs[i] and any(longest_run(h) > runs[i] for h in hyps)
    ]
    hypotheses.update(_decode_pieces(model, sources, again, beam))
    chars = source_chars or [None] * len(sources)
    return [
        mbr_choice(hypotheses[i], detokenize, chars[i]) if dec.mbr else hypotheses[i][0]
        for i in range(len(sources))
    ]


def _decode_pieces(
    model: ExportedModel, sources: list[list[int]], pieces: list[tuple], beam: int
) -> dict[int, list[list[int]]]:
    """The hypotheses (ids) of each sentence of `pieces`, by its row in `sources`. A piece: the
    rows of its sentences, their repeat guard and, optionally, their run limit; all are queued
    at once."""
    queued = []
    for rows, guard, *run in pieces:
        limits = [output_limit(len(sources[i]) - 2, model.config) for i in rows]
        if model.config.decode.search == "transformers":  # its budget's last token is [EOS]
            limits = [max(1, limit - 1) for limit in limits]
        skip = 0 if model.config.model.source_sos else 1  # a Marian model reads no [SOS]
        tokens = [[model.src_tokens[t] for t in sources[i][skip:]] for i in rows]
        batch = queue_batch(model, tokens, max(limits), beam, guard, *run)
        queued.append((rows, limits, batch))
    found: dict[int, list[list[int]]] = {}
    unk = model.tgt_ids.get("[UNK]", 0)
    for rows, limits, results in queued:
        for i, limit, result in zip(rows, limits, results, strict=True):
            # One budget per batch in CTranslate2: cut each to its own (greedy: exactly the same).
            found[i] = [
                [model.tgt_ids.get(t, unk) for t in tokens[:limit]]
                for tokens in result.result().hypotheses
            ]
    return found


def translate_exported(
    model: ExportedModel,
    sentences: list[str],
    beam: int | None = None,
    first_line: int | list[int] = 1,
) -> list[str]:
    """Translations in input order; an empty or blank sentence gives an empty string."""
    return translate_texts(
        sentences,
        model.src_tokenizer,
        model.tgt_tokenizer,
        model.max_source_tokens,
        lambda sources, chars: decode_exported(model, sources, beam, chars),
        first_line,
        recase=model.config.decode.recase,
        casing=model.casing if model.config.decode.truecase else None,
        spelling=model.spelling if model.config.decode.respell else None,
        split=model.config.decode.split_sentences,
    )


def override_decode(config: Config, overrides: list[str], command: str) -> Config:
    """The exported config with `--set decode.*=...` applied."""
    raw = config.to_dict()
    for item in overrides:
        if item.partition("=")[0].strip().split(".")[0] not in ("decode", "serve"):
            raise ConfigError(
                f"--set {item!r}: {command} --model takes only decode.* settings; "
                "the model was fixed at export"
            )
        apply_override(raw, item)
    return config_from_dict(raw, origin="--set")
