"""Evaluation during training: validation loss, BLEU/chrF, samples and their attention figures."""

from __future__ import annotations

import math
import sys
from contextlib import AbstractContextManager
from typing import Protocol

import torch

from translator.config import Config, TrainConfig
from translator.data.batching import collate
from translator.data.prepare import PreparedData
from translator.data.tokenizer import decode_ids
from translator.inference.decode import greedy_decode
from translator.inference.evaluate import evaluate_translations, validation_loss
from translator.metrics import Logger, NullLogger
from translator.model.transformer import Transformer
from translator.training.state import Progress


class Trainer(Protocol):
    """What evaluation reads of the Trainer (training/trainer.py), which it must not import."""

    config: Config
    cfg: TrainConfig
    model: Transformer
    data: PreparedData
    device: torch.device
    logger: Logger
    progress: Progress

    def autocast(self) -> AbstractContextManager[object]: ...


def evaluate(trainer: Trainer) -> float:
    """Validation loss: mean cross-entropy per real target token (no label smoothing)."""
    with trainer.autocast():
        return validation_loss(
            trainer.model, trainer.data.valid, trainer.cfg.batch_tokens, trainer.device
        )


def samples(trainer: Trainer) -> list[tuple[str, str, str]]:
    """(source, reference, greedy prediction) for the first few validation pairs; their
    cross-attention maps go to TensorBoard as images."""
    data, logger = trainer.data, trainer.logger
    n = min(trainer.cfg.n_samples, len(data.valid))
    if n == 0:
        return []
    items = [data.valid[i] for i in range(n)]
    batch = collate(items).to(trainer.device)
    dec = trainer.config.decode
    with trainer.autocast():
        outputs = greedy_decode(
            trainer.model, batch.src, dec.max_len_a, dec.max_len_b, ban_unk=dec.ban_unk
        )
    if not isinstance(logger, NullLogger):
        from translator.inference.attention import translation_figure

        for i, (item, out) in enumerate(zip(items, outputs, strict=True)):
            fig = translation_figure(
                trainer.model,
                item["encoder_input"],
                out,
                data.src_tokenizer,
                data.tgt_tokenizer,
                dec,
            )
            logger.figure(f"valid/attention_{i + 1}", fig, trainer.progress.step)
    return [
        (src, ref, decode_ids(data.tgt_tokenizer, out))
        for (src, ref), out in zip(data.valid_pairs[:n], outputs, strict=True)
    ]


def validate_and_sample(trainer: Trainer) -> tuple[float, float]:
    """Validation loss (and BLEU/chrF), samples to the log and TensorBoard.

    Returns (validation loss, BLEU); BLEU is NaN when `train.eval_bleu` is off or there is no
    validation data.
    """
    from tqdm import tqdm

    step, logger = trainer.progress.step, trainer.logger
    valid_loss = evaluate(trainer)
    logger.scalar("valid/loss", valid_loss, step)
    lines = [f"step {step}: valid loss {valid_loss:.4f}"]
    bleu = math.nan
    if trainer.cfg.eval_bleu and len(trainer.data.valid):
        with trainer.autocast():
            _, scores = evaluate_translations(
                trainer.model,
                trainer.data,
                trainer.config.decode,
                trainer.device,
                beam=1,
                progress=False,
            )
        bleu = scores.bleu
        logger.scalar("valid/bleu", scores.bleu, step)
        logger.scalar("valid/chrf", scores.chrf, step)
        lines[0] += f", BLEU {scores.bleu:.2f}, chrF {scores.chrf:.2f} (greedy)"
    pairs = samples(trainer)
    table = "| source | reference | prediction |\n|---|---|---|\n" + "\n".join(
        f"| {s} | {r} | {h} |" for s, r, h in pairs
    )
    logger.text("valid/samples", table, step)
    logger.flush()
    lines += [f"  src: {s}\n  ref: {r}\n  hyp: {h}" for s, r, h in pairs]
    tqdm.write("\n".join(lines), file=sys.stderr)
    return valid_loss, bleu
