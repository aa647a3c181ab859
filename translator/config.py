"""Typed, validated configuration: YAML file -> dict -> `--set` overrides -> frozen `Config`.

Every bad key, type or value fails here, before any work starts, with a `ConfigError` that names
the key (and the closest valid one for a typo).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from translator.errors import ConfigError, TranslatorError


@dataclass(frozen=True)
class DataConfig:
    source: str = "opus_books"
    """A hub dataset name (read with `datasets.load_dataset`) or a .jsonl/.parquet/.tsv path."""
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
    (`l'`, `dell'`, `un'`, `po'`, `de'`) stay. See translator/normalize.py for the rules."""
    max_len: int = 128
    """Longest sentence kept, in tokens per side (specials excluded); longer pairs are dropped."""
    swap_names: int = 0
    """Name swapping (translator/augment.py): for each training pair that copies a name from
    source to target, add this many copies with the name replaced on both sides by another name
    from the corpus, so the model learns to copy names it rarely sees. 0 turns it off. Only the
    training split is augmented; the tokenizers are trained before."""
    cache_dir: str | None = None
    """Where the `datasets` library caches downloads; default ~/.cache/translator/datasets."""

    def validate(self) -> None:
        _positive(self, "data", "valid_size", "max_len")
        if self.swap_names < 0:
            raise ConfigError(f"data.swap_names must be 0 or more, got {self.swap_names}")
        if self.lang_src == self.lang_tgt:
            raise ConfigError("data.lang_src and data.lang_tgt are both " + repr(self.lang_src))


@dataclass(frozen=True)
class TokenizerConfig:
    kind: Literal["word", "bpe", "unigram"] = "word"
    """`word`: WordLevel, one token per word or punctuation run, rare words [UNK]; `bpe`:
    byte-level BPE subwords; `unigram`: SentencePiece-style Unigram subwords with byte fallback.
    The subword kinds never produce [UNK] and turn their tokens back into exactly the text."""
    vocab_size: int | None = None
    """Vocabulary size (specials included): the size `bpe`/`unigram` build (default 8000); for
    `word` a cap, as `max_vocab`."""
    min_freq: int = 2
    """Words (word) or pairs to merge (bpe) seen fewer times than this in the training split are
    left out of the vocabulary."""
    max_vocab: int | None = None
    """Cap on the `word` vocabulary per language (specials included); null means no cap."""
    shared: bool = False
    """One vocabulary for both languages, trained on both sides; the encoder's and decoder's
    embeddings and the output layer then share one matrix."""

    def validate(self) -> None:
        _positive(self, "tokenizer", "min_freq", "max_vocab", "vocab_size")
        if self.vocab_size and self.max_vocab and self.vocab_size != self.max_vocab:
            raise ConfigError(
                f"tokenizer.vocab_size ({self.vocab_size}) and tokenizer.max_vocab "
                f"({self.max_vocab}) disagree; set only tokenizer.vocab_size"
            )
        if self.kind != "word" and (self.size or 0) < 300:
            raise ConfigError(
                f"tokenizer.vocab_size must be at least 300 for kind {self.kind} "
                "(256 byte pieces and the specials come first), e.g. 8000"
            )

    @property
    def size(self) -> int | None:
        """The vocabulary size to build: vocab_size, else max_vocab, else 8000 for subwords."""
        return self.vocab_size or self.max_vocab or (None if self.kind == "word" else 8000)


@dataclass(frozen=True)
class ModelConfig:
    d_model: int = 512
    n_heads: int = 8
    encoder_layers: int = 6
    decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    """Dropout on embeddings, sublayer outputs and the FFN's hidden layer (the paper's P_drop)."""
    attention_dropout: float = 0.0
    """Dropout on attention weights (not in the paper; above 0 it rules out fused CPU kernels)."""
    norm: Literal["pre", "post"] = "pre"
    """`pre`: LayerNorm before each sublayer (stable); `post`: after the residual (the paper's)."""
    activation: Literal["relu", "gelu"] = "relu"
    positions: Literal["sinusoidal", "learned"] = "sinusoidal"
    max_positions: int = 512
    """Longest sequence the position table covers (specials included)."""
    tie_embeddings: bool = False
    """Share the target embedding matrix with the output projection."""

    def validate(self) -> None:
        _positive(
            self,
            "model",
            "d_model",
            "n_heads",
            "encoder_layers",
            "decoder_layers",
            "d_ff",
            "max_positions",
        )
        if self.d_model % self.n_heads:
            raise ConfigError(
                f"model.d_model ({self.d_model}) must be divisible by "
                f"model.n_heads ({self.n_heads})"
            )
        _unit_interval(self.dropout, "model.dropout")
        _unit_interval(self.attention_dropout, "model.attention_dropout")


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 1234
    epochs: int = 20
    max_steps: int | None = None
    """Stop after this many optimizer steps (then `epochs` is ignored); null: train for `epochs`."""
    max_minutes: float | None = None
    """Also stop after this much wall time of training (this session; evaluation included)."""
    batch_tokens: int = 4096
    """Token budget per batch: batch size x longest sequence in it stays within this."""
    accum_steps: int = 1
    """Batches whose gradients are summed into one optimizer step."""
    lr: float = 7e-4
    """Peak learning rate, reached at the end of warmup."""
    schedule: Literal["inverse_sqrt", "constant", "linear", "cosine"] = "inverse_sqrt"
    """After the linear warmup: `inverse_sqrt` (the paper's), `constant`, or a `linear` or
    `cosine` decay that reaches zero when the budget runs out: train.max_minutes (in wall time)
    or train.max_steps / epochs (in steps), whichever comes first. A resumed run goes on decaying
    from where it stopped, towards its new deadline."""
    warmup_steps: int = 4000
    weight_decay: float = 0.0
    label_smoothing: float = 0.1
    clip_norm: float | None = 1.0
    """Clip the global gradient norm to this; null disables clipping."""
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    """`auto`: bf16 autocast on GPUs that support it and on CPUs with bf16 instructions (AVX-512
    BF16, AMX), fp32 elsewhere; `bf16` forces it, `fp32` turns it off."""
    compile: bool = False
    """Wrap the model in `torch.compile`."""
    log_every: int = 10
    eval_every: int = 500
    """Validation loss and samples every this many steps; 0 turns it off (still runs at the end)."""
    eval_bleu: bool = True
    """At each evaluation also decode the validation split (greedy) for BLEU and chrF."""
    best_metric: Literal["loss", "bleu"] = "loss"
    """What `best.pt` is chosen by: the lowest validation loss or the highest BLEU."""
    n_samples: int = 3
    checkpoint_every: int = 500
    average_last: int = 0
    """Keep the last K checkpoints written every checkpoint_every steps (step_N.pt) and, at the
    end of training, write averaged.pt, the mean of their weights (and of the final weights).
    `translate` and `validate` then use it. 0 keeps none."""
    on_nonfinite: Literal["stop", "skip"] = "stop"
    """A step whose loss is NaN/inf: `stop` the run, or `skip` the update and count it."""

    def validate(self) -> None:
        _positive(
            self,
            "train",
            "epochs",
            "max_minutes",
            "max_steps",
            "batch_tokens",
            "accum_steps",
            "lr",
            "log_every",
            "checkpoint_every",
            "clip_norm",
        )
        _non_negative(
            self, "train", "warmup_steps", "weight_decay", "eval_every", "n_samples", "average_last"
        )
        _unit_interval(self.label_smoothing, "train.label_smoothing")


@dataclass(frozen=True)
class DecodeConfig:
    beam: int = 1
    """1 = greedy; larger values run beam search."""
    alpha: float = 0.6
    """Length penalty exponent for beam search ((5 + len) / 6) ** alpha."""
    max_len_a: float = 1.5
    max_len_b: int = 10
    """Outputs stop after max_len_a * source_length + max_len_b tokens."""
    batch_size: int = 128
    """Sentences decoded together (beam search: each with `beam` rows)."""
    ban_unk: bool = False
    """Never output [UNK]: take the best known word instead (fairseq's --unkpen taken to the limit).
    Off by default, so that a user sees where the vocabulary ran out."""
    mbr: bool = False
    """Minimum Bayes risk: of the `beam` best hypotheses, output the one with the highest total
    chrF against the others (the consensus) instead of the most probable one. Slower (the text
    of every hypothesis is compared with every other); no effect when beam is 1."""

    def validate(self) -> None:
        _positive(self, "decode", "beam", "max_len_a", "batch_size")
        _non_negative(self, "decode", "alpha", "max_len_b")


@dataclass(frozen=True)
class ServeConfig:
    max_texts: int = 64
    """Most sentences one `translator serve` request may carry; more get a 413 JSON error."""
    max_chars: int = 1000
    """Longest sentence, in characters, `translator serve` takes; longer gets a 413 JSON error."""
    max_beam: int = 16
    """Largest beam a request may ask for."""

    def validate(self) -> None:
        _positive(self, "serve", "max_texts", "max_chars", "max_beam")


@dataclass(frozen=True)
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (YAML- and checkpoint-safe)."""
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- loading


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read a YAML file (or start from defaults when `path` is None), apply `section.key=value`."""
    raw = read_yaml(Path(path)) if path is not None else {}
    for item in overrides:
        apply_override(raw, item)
    return config_from_dict(raw, origin=str(path) if path else "defaults")


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML config file into a dict; errors name the file and line."""
    if not path.is_file():
        raise ConfigError(f"config file not found: {path} (see configs/ for examples)")
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"invalid YAML in {where}: {problem}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must be a mapping of sections (data:, model:, ...)")
    return raw


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` is not a key
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, typing.Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice; keep one", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one `section.key=value` override (value parsed as YAML) to the raw dict."""
    key, sep, value = item.partition("=")
    parts = key.strip().split(".")
    if not sep or len(parts) != 2 or not all(parts):
        raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. train.max_steps=100")
    section, name = parts
    _check_key(section, _SECTIONS, "", f"--set {item!r}")
    _check_key(name, _field_names(_SECTIONS[section]), f"{section}.", f"--set {item!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError:
        parsed = value
    if raw.get(section) is None:  # absent, or an empty `section:` in the file
        raw[section] = {}
    sub = raw[section]
    if not isinstance(sub, dict):
        raise ConfigError(f"config section {section!r} must be a mapping")
    sub[name] = parsed


def config_from_dict(raw: dict[str, Any], origin: str = "config") -> Config:
    """Build and validate a `Config` from a nested dict, rejecting unknown keys and bad types."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: the config must be a mapping of sections")
    sections = {}
    for section, values in raw.items():
        _check_key(str(section), _SECTIONS, "", origin)
        cls = _SECTIONS[section]
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ConfigError(f"{origin}: section {section!r} must be a mapping of keys")
        sections[section] = _build_section(cls, section, values, origin)
    config = Config(**sections)
    for section in _SECTIONS:
        getattr(config, section).validate()
    if config.train.best_metric == "bleu" and not config.train.eval_bleu:
        raise ConfigError("train.best_metric bleu needs train.eval_bleu: true")
    if config.model.max_positions < config.data.max_len + 2:
        raise ConfigError(
            f"model.max_positions ({config.model.max_positions}) must be at least "
            f"data.max_len + 2 ({config.data.max_len + 2})"
        )
    return config


def save_config(config: Config, path: Path) -> None:
    """Write the resolved config as YAML, atomically: a run killed meanwhile keeps the old one."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TranslatorError(
            f"could not write {path}: {exc.strerror or exc}; free some disk space or choose a "
            "writable weights directory"
        ) from None


_SECTIONS: dict[str, type] = {
    "data": DataConfig,
    "tokenizer": TokenizerConfig,
    "model": ModelConfig,
    "train": TrainConfig,
    "decode": DecodeConfig,
    "serve": ServeConfig,
}


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _check_key(key: str, valid: Any, prefix: str, origin: str) -> None:
    if key in valid:
        return
    close = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.5)
    hint = f"; did you mean {prefix}{close[0]}?" if close else f"; valid: {', '.join(valid)}"
    raise ConfigError(f"{origin}: unknown config key {prefix}{key}{hint}")


def _build_section(cls: type, section: str, values: dict[str, Any], origin: str) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        _check_key(str(key), _field_names(cls), f"{section}.", origin)
        kwargs[key] = _coerce(value, hints[key], f"{section}.{key}", origin)
    return cls(**kwargs)


def _coerce(value: Any, hint: Any, key: str, origin: str) -> Any:
    """Check `value` against a type hint; ints are accepted where floats are expected."""
    origin_type = typing.get_origin(hint)
    if origin_type in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], key, origin)
    if origin_type is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(
                f"{origin}: {key} must be one of {', '.join(map(str, choices))}, got {value!r}"
            )
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is float and isinstance(value, str):
        try:  # YAML 1.1 reads "1e-4" as a string; accept it as the number it plainly is
            value = float(value)
        except ValueError:
            pass
    if hint is float and isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{origin}: {key} must be a finite number, got {value!r}")
    if hint is int and isinstance(value, bool) or not isinstance(value, hint):
        raise ConfigError(
            f"{origin}: {key} must be {_type_name(hint)}, got {value!r} ({type(value).__name__})"
        )
    return value


def _type_name(hint: Any) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        hint, str(hint)
    )


def _positive(obj: Any, section: str, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None and value <= 0:
            raise ConfigError(f"{section}.{name} must be positive, got {value}")


def _non_negative(obj: Any, section: str, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None and value < 0:
            raise ConfigError(f"{section}.{name} must be >= 0, got {value}")


def _unit_interval(value: float, key: str) -> None:
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"{key} must be in [0, 1), got {value}")
