"""Metrics and logging: corpus BLEU / chrF with sacreBLEU, and a TensorBoard logger."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Scores:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str


def corpus_scores(hypotheses: list[str], references: list[str]) -> Scores:
    """Corpus BLEU and chrF of detokenized hypotheses against one reference each."""
    from sacrebleu.metrics import BLEU, CHRF

    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return Scores(b.score, c.score, str(bleu.get_signature()), str(chrf.get_signature()))


class Logger(Protocol):
    def scalar(self, tag: str, value: float, step: int) -> None: ...
    def text(self, tag: str, text: str, step: int) -> None: ...
    def figure(self, tag: str, figure: Any, step: int) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class NullLogger:
    """A logger that drops everything (non-zero ranks, tests)."""

    def scalar(self, tag: str, value: float, step: int) -> None:
        pass

    def text(self, tag: str, text: str, step: int) -> None:
        pass

    def figure(self, tag: str, figure: Any, step: int) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class TensorBoardLogger:
    """Writes scalars and text to TensorBoard event files in `log_dir`."""

    def __init__(self, log_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))

    def scalar(self, tag: str, value: float, step: int) -> None:
        self.writer.add_scalar(tag, value, step)

    def text(self, tag: str, text: str, step: int) -> None:
        self.writer.add_text(tag, text, step)

    def figure(self, tag: str, figure: Any, step: int) -> None:
        """A matplotlib Figure, as an image."""
        self.writer.add_figure(tag, figure, step, close=False)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
