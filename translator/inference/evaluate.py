"""Evaluation: validation loss, and BLEU / chrF of decoded translations; `translator validate`."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from translator.config import DecodeConfig
from translator.data.batching import BilingualDataset, TokenBatchSampler, collate
from translator.data.prepare import PreparedData
from translator.data.tokenizer import decode_ids
from translator.device import resolve_device
from translator.errors import ConfigError, DataError
from translator.inference.predict import (
    LoadedModel,
    decode_in_batches,
    load_model,
    override_config,
    resolve_beam,
    translate_sentences,
    write_lines,
)
from translator.metrics import Scores
from translator.model.transformer import Transformer
from translator.run.paths import RunPaths, find_checkpoint
from translator.specials import PAD_ID

log = logging.getLogger("translator")


@torch.no_grad()
def validation_loss(
    model: Transformer, dataset: BilingualDataset, batch_tokens: int, device: torch.device
) -> float:
    """Mean cross-entropy per real target token (no label smoothing); NaN for no data."""
    if len(dataset) == 0:
        return math.nan
    was_training = model.training
    model.eval()
    sampler = TokenBatchSampler(
        dataset.src_lengths(), dataset.tgt_lengths(), batch_tokens, 0, shuffle=False
    )
    total, count = 0.0, 0
    for indices in sampler.batches(0):
        batch = collate([dataset[i] for i in indices]).to(device)
        select = batch.tgt_out != PAD_ID
        logits = model(batch.src, batch.tgt_in, select)  # (N, V)
        total += float(F.cross_entropy(logits.float(), batch.tgt_out[select], reduction="sum"))
        count += batch.n_tgt_tokens
    model.train(was_training)
    return total / count


def evaluate_translations(
    model: Transformer,
    data: PreparedData,
    decode_cfg: DecodeConfig,
    device: torch.device,
    beam: int | None = None,
    progress: bool = True,
) -> tuple[list[str], Scores]:
    """Translate the validation split; corpus BLEU and chrF against its raw reference text. Each
    source's length in characters bounds `decode.mbr`'s choice, as when translating it."""
    references = [ref for _, ref in data.valid_pairs]
    chars = [len(src) for src, _ in data.valid_pairs]
    return score_dataset(
        model, data.valid, references, data.tgt_tokenizer, decode_cfg, device, beam, progress, chars
    )


def score_dataset(
    model: Transformer,
    dataset: BilingualDataset,
    references: list[str],
    tgt_tokenizer: Tokenizer,
    decode_cfg: DecodeConfig,
    device: torch.device,
    beam: int | None = None,
    progress: bool = True,
    source_chars: list[int] | None = None,
) -> tuple[list[str], Scores]:
    """Translate an encoded set; corpus BLEU and chrF against `references` (aligned with it).
    `source_chars` (each source's length as written) bounds `decode.mbr`'s choice."""
    from translator.metrics import corpus_scores

    sources = [dataset[i]["encoder_input"] for i in range(len(dataset))]
    detokenize = partial(decode_ids, tgt_tokenizer)
    outputs = decode_in_batches(
        model, sources, decode_cfg, device, beam, progress, detokenize, source_chars
    )
    hypotheses = [detokenize(out) for out in outputs]
    if not hypotheses:
        return [], Scores(math.nan, math.nan, "", "")
    return hypotheses, corpus_scores(hypotheses, references)


def validate_file(
    loaded: LoadedModel,
    run: str,
    data_file: Path,
    beam: int,
    output: Path | None,
    n_samples: int = 3,
) -> Validation:
    """`validate --data FILE`: translate the file's source side as `translate` would, score it
    against its target side (sacreBLEU), and the loss of its pairs within data.max_len."""
    from translator.data.testsets import encode_eval_sets, read_test_pairs
    from translator.metrics import corpus_scores

    pairs = read_test_pairs(str(data_file), loaded.config.data, "--data")
    hypotheses = translate_sentences(loaded, [src for src, _ in pairs], beam)
    scores = corpus_scores(hypotheses, [ref for _, ref in pairs])
    (encoded,) = encode_eval_sets(
        {"data": pairs}, loaded.src_tokenizer, loaded.tgt_tokenizer, loaded.config.data.max_len
    )
    loss = validation_loss(
        loaded.model, encoded.dataset, loaded.config.train.batch_tokens, loaded.device
    )
    if output is not None:
        write_lines(output, hypotheses)
    samples = [(s, r, h) for (s, r), h in zip(pairs, hypotheses, strict=True)][:n_samples]
    kept = (
        ""
        if len(encoded.pairs) == len(pairs)
        else f"; loss on the {len(encoded.pairs):,} within data.max_len"
    )
    result = Validation(loaded, run, beam, loss, scores, hypotheses, samples, f"{data_file}{kept}")
    print(format_validation(result))
    return result


# --------------------------------------------------------------------------- the command


@dataclass
class Validation:
    """What `translator validate` found."""

    loaded: LoadedModel
    run: str
    beam: int
    loss: float
    scores: Scores
    hypotheses: list[str]
    samples: list[tuple[str, str, str]]
    data: str = "the run's validation split"


def validate_command(
    run: str | None,
    checkpoint: Path | None,
    beam: int | None,
    output: Path | None,
    config_path: Path | None,
    overrides: list[str],
    device_name: str | None,
    runs_root: Path = Path("runs"),
    weights_root: Path = Path("weights"),
    n_samples: int = 3,
    data_file: Path | None = None,
) -> Validation:
    """`translator validate`: loss, BLEU and chrF of a checkpoint on its run's validation split,
    or on the pairs of `data_file`."""
    from translator.data.prepare import prepare_data
    from translator.metrics import TensorBoardLogger

    if output is not None and not output.resolve().parent.is_dir():
        raise ConfigError(f"--output {output}: no directory {output.parent}")
    ckpt, run_dir = find_checkpoint(run, checkpoint, weights_root)
    loaded = load_model(ckpt, run_dir, resolve_device(device_name))
    loaded.config = override_config(loaded.config, config_path, overrides, "validate")
    beam = resolve_beam(beam, loaded.config)
    log.info("using %s (step %d)", ckpt, loaded.step)
    if data_file is not None:
        result = validate_file(loaded, run_dir.name, data_file, beam, output, n_samples)
        record_scores(run_dir, result)
        return result
    paths = RunPaths(run_dir.name, runs_root / run_dir.name, run_dir)
    data = prepare_data(loaded.config, paths)
    if len(data.valid) == 0:
        raise DataError(f"run {paths.name}: its validation split is empty; nothing to score")
    loss = validation_loss(
        loaded.model, data.valid, loaded.config.train.batch_tokens, loaded.device
    )
    hypotheses, scores = evaluate_translations(
        loaded.model, data, loaded.config.decode, loaded.device, beam, progress=True
    )
    if output is not None:
        write_lines(output, hypotheses)
    suffix = "" if beam == 1 else f"_beam{beam}"
    try:
        logger = TensorBoardLogger(paths.log_dir)
    except OSError as exc:
        log.warning("warning: cannot write TensorBoard events to %s (%s)", paths.log_dir, exc)
    else:
        for tag, value in (
            ("loss", loss),
            (f"bleu{suffix}", scores.bleu),
            (f"chrf{suffix}", scores.chrf),
        ):
            logger.scalar(f"valid/{tag}", value, loaded.step)
        logger.close()
    samples = [(s, r, h) for (s, r), h in zip(data.valid_pairs, hypotheses, strict=True)]
    result = Validation(loaded, paths.name, beam, loss, scores, hypotheses, samples[:n_samples])
    print(format_validation(result))
    record_scores(run_dir, result)
    return result


SCORES_FILE = "scores.jsonl"


def record_scores(run_dir: Path, v: Validation) -> None:
    """Add what `validate` printed to the run's scores.jsonl, one line a validation (the model
    card of `export --format transformers` lists them); a run directory it cannot write to is
    a warning, not a failed validation."""
    line = {
        "data": v.data,
        "checkpoint": v.loaded.checkpoint.name,
        "step": v.loaded.step,
        "beam": v.beam,
        "sentences": len(v.hypotheses),
        "loss": round(v.loss, 4) if math.isfinite(v.loss) else None,
        "bleu": round(v.scores.bleu, 2),
        "chrf": round(v.scores.chrf, 2),
    }
    try:
        with open(run_dir / SCORES_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
    except OSError as exc:
        log.warning("warning: cannot record the scores in %s (%s)", run_dir / SCORES_FILE, exc)


def format_validation(v: Validation) -> str:
    """The table and samples `translator validate` prints."""
    dec = v.loaded.config.decode
    search = "greedy" if v.beam == 1 else f"beam {v.beam}, length penalty alpha {dec.alpha}"
    rows = [
        ("run", v.run),
        ("data", v.data),
        ("checkpoint", f"{v.loaded.checkpoint} (step {v.loaded.step:,})"),
        ("decoding", f"{search}; at most {dec.max_len_a} x source + {dec.max_len_b} tokens"),
        ("sentences", f"{len(v.hypotheses):,}"),
        ("loss", f"{v.loss:.4f} (perplexity {math.exp(min(v.loss, 50.0)):.2f})"),
        ("BLEU", f"{v.scores.bleu:.2f}"),
        ("chrF", f"{v.scores.chrf:.2f}"),
    ]
    lines = [f"{name:<11} {value}" for name, value in rows]
    lines += [f"BLEU signature: {v.scores.bleu_signature}"]
    lines += [f"chrF signature: {v.scores.chrf_signature}"]
    for src, ref, hyp in v.samples:
        lines += ["", f"src: {src}", f"ref: {ref}", f"hyp: {hyp}"]
    return "\n".join(lines)
