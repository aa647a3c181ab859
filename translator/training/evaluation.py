"""Evaluation during training: validation loss, BLEU/chrF, samples and their attention figures."""

from __future__ import annotations

import math
import sys
from contextlib import AbstractContextManager
from typing import Protocol

import torch

from translator.config import Config, TrainConfig
from translator.data.batching import BilingualDataset, collate
from translator.data.prepare import PreparedData
from translator.data.tokenizer import decode_ids
from translator.inference.decode import greedy_decode
from translator.inference.evaluate import score_dataset, validation_loss
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
            trainer.model, batch.src, dec.max_len_a, dec.max_len_b,
            ban_unk=dec.ban_unk, no_repeat_ngram=dec.no_repeat_ngram, max_run=dec.max_run,
        )  # fmt: skip
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


def validate_and_sample(trainer: Trainer) -> dict[str, float]:
    """Loss (and BLEU/chrF) on the validation split and on each of `train.eval_sets`, samples
    to the log and TensorBoard.

    Returns each figure by its TensorBoard tag (`valid/loss`, `valid/bleu`, `dev/loss`, ...);
    BLEU is NaN when `train.eval_bleu` is off or the set is empty.
    """
    from tqdm import tqdm

    data = trainer.data
    figures = score_set(trainer, "valid", data.valid, [ref for _, ref in data.valid_pairs])
    lines = [f"step {trainer.progress.step}: {_describe('valid', figures)}"]
    for eval_set in data.eval_sets:
        refs = [ref for _, ref in eval_set.pairs]
        found = score_set(trainer, eval_set.name, eval_set.dataset, refs)
        figures.update(found)
        lines.append(f"  {_describe(eval_set.name, found)}")
    pairs = samples(trainer)
    table = "| source | reference | prediction |\n|---|---|---|\n" + "\n".join(
        f"| {s} | {r} | {h} |" for s, r, h in pairs
    )
    trainer.logger.text("valid/samples", table, trainer.progress.step)
    trainer.logger.flush()
    lines += [f"  src: {s}\n  ref: {r}\n  hyp: {h}" for s, r, h in pairs]
    tqdm.write("\n".join(lines), file=sys.stderr)
    return figures


def score_set(
    trainer: Trainer, name: str, dataset: BilingualDataset, references: list[str]
) -> dict[str, float]:
    """Loss, and greedy BLEU and chrF when `train.eval_bleu`, of one set, logged as NAME/..."""
    step, logger = trainer.progress.step, trainer.logger
    with trainer.autocast():
        loss = validation_loss(trainer.model, dataset, trainer.cfg.batch_tokens, trainer.device)
    figures = {f"{name}/loss": loss, f"{name}/bleu": math.nan}
    if trainer.cfg.eval_bleu and len(dataset):
        with trainer.autocast():
            _, scores = score_dataset(
                trainer.model,
                dataset,
                references,
                trainer.data.tgt_tokenizer,
                trainer.config.decode,
                trainer.device,
                beam=1,
                progress=False,
            )
        figures.update({f"{name}/bleu": scores.bleu, f"{name}/chrf": scores.chrf})
    for tag, value in figures.items():
        if math.isfinite(value) or tag.endswith("loss"):
            logger.scalar(tag, value, step)
    return figures


def _describe(name: str, figures: dict[str, float]) -> str:
    text = f"{name} loss {figures[f'{name}/loss']:.4f}"
    if math.isfinite(figures[f"{name}/bleu"]):
        text += f", BLEU {figures[f'{name}/bleu']:.2f}, chrF {figures[f'{name}/chrf']:.2f} (greedy)"
    return text
