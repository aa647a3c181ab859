"""The data: section of a config: where the pairs come from and how they are cleaned."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from translator.config.checks import positive, unit_interval
from translator.errors import ConfigError


@dataclass(frozen=True)
class DataConfig:
    source: str | dict[str, str | float] | list[str | dict[str, str | float]] = "opus_books"
    """Where the pairs come from: a hub dataset name (read with `datasets.load_dataset`); a
    .jsonl / .parquet / .tsv file; a Moses-format pair of files, given as their common prefix
    (`OpenSubtitles.en-it` for `OpenSubtitles.en-it.en` + `OpenSubtitles.en-it.it`) or as a
    mapping `{en: FILE, it: FILE}`; any file may be gzipped (`.gz`). A list of these reads them
    all, in order, each counted in the data summary. An entry may carry a weight, as
    `{path: FILE, weight: 2}` (or `{en: FILE, it: FILE, weight: 0.25}`): each epoch a whole
    number repeats the entry's training pairs that many times, a fraction takes that share of
    them, drawn afresh each epoch from the seed (2.5: twice, and half once more). Weights act
    when batches are made: changing one prepares nothing again."""
    hub_config: str | None = None
    """The hub dataset's configuration; default `<lang_src>-<lang_tgt>`, e.g. `en-it`."""
    lang_src: str = "en"
    lang_tgt: str = "it"
    valid_size: int = 1000
    """Number of pairs held out for validation (seeded split, recorded in the run directory)."""
    dedup: bool = True
    """Drop exact duplicate pairs (before the split, so none straddles train and validation)."""
    normalize: Literal["none", "nfc"] = "nfc"
    """Unicode normalisation of both sides before anything else: `nfc` composes `e` + combining
    accent into `è` (so one word has one spelling); `none` keeps the text as read. Whitespace runs
    always become one space."""
    restore_accents: bool = False
    """On the Italian side (`it`), write accents that the text spells with an apostrophe as real
    accents: `e'` -> `è`, `perche'` -> `perché`, `citta'` -> `città`; elisions and truncations
    (`l'`, `dell'`, `un'`, `po'`, `de'`) stay. See translator/data/normalize.py for the rules."""
    subtitles: bool = False
    """Take subtitle habits out of the pairs (translator/data/subtitles.py): dialogue dashes,
    `[sound notes]` and ♪, speaker labels; and drop pairs whose sides disagree in their number of
    dialogue turns, are over 3x longer one than the other, or are the same text of 4+ words."""
    max_len: int = 128
    """Longest sentence kept, in tokens per side (specials excluded); longer pairs are dropped."""
    swap_names: int = 0
    """Name swapping (translator/data/augment.py): for each training pair that copies a name from
    source to target, add this many copies with the name replaced on both sides by another name
    from the corpus, so the model learns to copy names it rarely sees. 0 turns it off. Only the
    training split is augmented; the tokenizers are trained before."""
    join_pairs: float = 0.0
    """Concatenation (translator/data/augment.py): for this share of the training pairs, drawn
    at random, add one more pair made of it and the next training pair of the corpus (in a
    subtitle file, mostly the next line of the same scene), joined by a space on both sides,
    so the model also sees longer inputs and a sentence in context. Joined pairs over `max_len`
    are left out. 0 turns it off."""
    noise: dict[str, float] = field(default_factory=dict)
    """Text as people type it (translator/data/typed.py): the share of the training pairs shown
    in each form, e.g. `{upper: 0.02, lower: 0.1, title: 0.03, typos: 0.1}`: `upper` all
    capitals (both sides); `lower` lower case without final punctuation, `title` Each Word
    Capitalised and `typos` a few letters swapped, dropped or doubled, in the source only (the
    target stays as written). Drawn with the seed when the data is prepared; the validation
    pairs stay as written. Empty: off."""
    typo_words: float = 0.25
    """In a pair of the `typos` form, the share of the source's words given a typo."""
    cache_dir: str | None = None
    """Where the `datasets` library caches downloads; default ~/.cache/translator/datasets."""
    store_dir: str | None = None
    """Where prepared stores live (`translator prepare`): token ids on disk, found by a key of
    their sources and settings, so runs on the same data prepare once. Default
    ~/.cache/translator/stores; point it at a shared filesystem for several machines."""
    workers: int | None = None
    """Processes that read and clean the corpus in `prepare`; null: one per CPU core."""

    def sources(self) -> list[str | dict[str, str]]:
        """`source` as a list of entries, without their weights."""
        return [_without_weight(entry) for entry in self._entries()]

    def weights(self) -> list[float]:
        """Each entry's weight (1 where none is given)."""
        return [
            float(entry.get("weight", 1.0)) if isinstance(entry, dict) else 1.0
            for entry in self._entries()
        ]

    def _entries(self) -> list[str | dict[str, str | float]]:
        return list(self.source) if isinstance(self.source, list) else [self.source]

    def validate(self) -> None:
        positive(self, "data", "valid_size", "max_len", "workers")
        entries = self._entries()
        if len(entries) > MAX_SOURCES:
            raise ConfigError(
                f"data.source lists {len(entries)} entries; at most {MAX_SOURCES} (join files)"
            )
        for n, entry in enumerate(entries):
            key = f"data.source[{n}]" if isinstance(self.source, list) else "data.source"
            if isinstance(entry, dict):
                self._check_entry(entry, key)
        unit_interval(self.join_pairs, "data.join_pairs")
        unit_interval(self.typo_words, "data.typo_words")
        for name, share in self.noise.items():
            if name not in NOISE_FORMS:
                raise ConfigError(
                    f"data.noise.{name}: no such form; the forms are {', '.join(NOISE_FORMS)}"
                )
            unit_interval(share, f"data.noise.{name}")
        if sum(self.noise.values()) > 1:
            raise ConfigError(
                f"data.noise: the shares add up to {sum(self.noise.values()):g}, more than all "
                "the pairs; make them add up to 1 or less"
            )
        if self.swap_names < 0:
            raise ConfigError(f"data.swap_names must be 0 or more, got {self.swap_names}")
        if self.lang_src == self.lang_tgt:
            raise ConfigError("data.lang_src and data.lang_tgt are both " + repr(self.lang_src))

    def _check_entry(self, entry: dict[str, str | float], key: str) -> None:
        if "weight" in entry:
            weight = _number(entry["weight"])
            if weight is None or not math.isfinite(weight) or weight <= 0:
                raise ConfigError(
                    f"{key}.weight must be a positive number (2 repeats the pairs twice an "
                    f"epoch, 0.25 takes a quarter of them), got {entry['weight']!r}"
                )
        rest = set(entry) - {"weight"}
        if rest == {"path"}:
            if not isinstance(entry["path"], str):
                raise ConfigError(
                    f"{key}.path must be a file or dataset name, got {entry['path']!r}"
                )
            return
        if rest != {self.lang_src, self.lang_tgt} or not all(
            isinstance(entry[k], str) for k in rest
        ):
            raise ConfigError(
                f"{key} {entry}: an entry is {{path: FILE, weight: W}}, or a Moses pair with one "
                f"file per language, {{{self.lang_src}: FILE, {self.lang_tgt}: FILE}}"
            )


NOISE_FORMS = ("upper", "lower", "title", "typos")
"""The forms of `data.noise`, in the order their shares are laid out (translator/data/typed.py)."""

MAX_SOURCES = 255
"""Entries of data.source: the prepared store keeps each training pair's entry in a byte."""


def _number(value: object) -> float | None:
    """A weight as a number: YAML reads `1e-2` as text, which is plainly a number too."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _without_weight(entry: str | dict[str, str | float]) -> str | dict[str, str]:
    """An entry of data.source as the reader takes it: `{path: P, weight: W}` is P."""
    if not isinstance(entry, dict):
        return entry
    if set(entry) - {"weight"} == {"path"}:
        return entry["path"]  # type: ignore[return-value]
    return {k: v for k, v in entry.items() if k != "weight"}  # type: ignore[misc]
