"""The cleaned corpus of a prepare (clean.tsv in the store's scratch folder), read back as often as
the phases need it: the tokenizers, the encoder, the extra pairs."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

import numpy as np
from tqdm import tqdm

from translator.config import Config
from translator.data.clean import Cleaner, FilterStats
from translator.data.read import Pair, Source, iter_source
from translator.data.store import SOURCE_DTYPE
from translator.data.typed import present
from translator.data.workers import clean_in_workers
from translator.errors import DataError

CHUNK = 20_000
"""Pairs per unit of work: cleaning in a worker process, encoding in one batch call."""


class CleanCorpus:
    """The cleaned pairs on disk (source<TAB>target a line; cleaning leaves no tab or newline in
    a sentence), read back as often as needed, only the pairs `keep` marks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.keep: np.ndarray | None = None
        self.forms: np.ndarray | None = None
        """The form of each kept pair (translator/data/typed.py), when `data.noise` is on."""
        self.noise_seed, self.typo_words = 0, 0.0
        self.lines_per_source: list[int] = []
        """Lines written for each entry of data.source, in order."""

    def source_of_kept(self) -> np.ndarray:
        """The entry of data.source (its index) of each kept pair, in corpus order."""
        counts = self.lines_per_source
        of_line = np.repeat(np.arange(len(counts), dtype=SOURCE_DTYPE), counts)
        return of_line if self.keep is None else of_line[self.keep]

    def write(
        self, sources: list[Source], config: Config, cleaner: Cleaner, stats: FilterStats
    ) -> np.ndarray:
        """Read and clean every source into the file; the hash of each pair written."""
        hashes: list[np.ndarray] = []
        workers = config.data.workers or os.cpu_count() or 1
        progress = bar("read + clean", "pairs")
        with self.path.open("w", encoding="utf-8", newline="\n") as out:
            for source in sources:
                read_before = stats.read
                self.lines_per_source.append(0)
                pieces = chunks(iter_source(source, config.data), CHUNK)
                for chunk in clean_in_workers(pieces, cleaner, workers):
                    out.writelines(f"{s}\t{t}\n" for s, t in chunk.pairs)
                    self.lines_per_source[-1] += len(chunk.pairs)
                    hashes.append(chunk.hashes)
                    progress.update(stats.count(chunk))
                if stats.read == read_before:
                    what = "the file holds" if source.paths else "the dataset has"
                    raise DataError(f"{source.name}: {what} no sentence pairs")
                stats.per_source.append((source.name, stats.read - read_before))
        progress.close()
        return np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.uint64)

    def __iter__(self) -> Iterator[Pair]:
        """The kept pairs, in corpus order."""
        keep = self.keep
        with self.path.open("rb") as f:
            for n, line in enumerate(f):
                if keep is None or keep[n]:
                    src, _, tgt = line.decode("utf-8").rstrip("\n").partition("\t")
                    yield src, tgt

    def presented(self) -> Iterator[Pair]:
        """The kept pairs, each in its form (as written where `data.noise` is off)."""
        if self.forms is None:
            return iter(self)
        return present(self, self.forms, self.noise_seed, self.typo_words)

    def subset(self, mask: np.ndarray, presented: bool = False) -> Iterable[Pair]:
        """A re-readable stream of the kept pairs that `mask` (over the kept pairs) selects, as
        written or each in its form."""
        corpus = self

        class Subset:
            def __iter__(self) -> Iterator[Pair]:
                pairs = corpus.presented() if presented else iter(corpus)
                return (p for p, chosen in zip(pairs, mask.tolist(), strict=False) if chosen)

        return Subset()


def chunks(pairs: Iterator[Pair], size: int) -> Iterator[list[Pair]]:
    while chunk := list(islice(pairs, size)):
        yield chunk


def bar(phase: str, unit: str, total: int | None = None) -> tqdm:
    return tqdm(desc=phase, unit=f" {unit}", unit_scale=True, total=total, disable=None)
