"""The config's sections, one frozen dataclass each, every one validating its own values."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from translator.config.checks import non_negative, positive, unit_interval
from translator.config.data import DataConfig
from translator.errors import ConfigError


@dataclass(frozen=True)
class TokenizerConfig:
    kind: Literal["word", "bpe", "unigram", "sentencepiece"] = "word"
    """`word`: WordLevel, one token per word or punctuation run, rare words [UNK]; `bpe`:
    byte-level BPE subwords; `unigram`: SentencePiece-style Unigram subwords with byte fallback.
    The subword kinds never produce [UNK] and turn their tokens back into exactly the text.
    `sentencepiece`: a model of the SentencePiece library itself (unigram, byte fallback), as
    OPUS-MT uses: a run trained with it exports whole to Hugging Face Transformers (`translator
    export --format transformers`); needs `pip install -e ".[hf]"`."""
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
    train_sample: int | None = 500_000
    """Train the tokenizers on a seeded sample of at most this many training pairs (all of them
    when there are fewer); null: on every training pair, however many. Name swapping finds its
    names in the same sample."""
    dropout: float = 0.0
    """BPE-dropout (`bpe` only; Provilkov et al. 2020): each training pair is encoded
    `dropout_copies` times, each time skipping every merge with this probability, so the model
    meets a word in several segmentations; epoch e trains on encoding e mod dropout_copies.
    Validation, the saved tokenizers and decoding never use it. 0 turns it off; 0.1 is the
    paper's rate."""
    dropout_copies: int = 10
    """Encodings of each training pair in the prepared store when `dropout` is above 0 (one per
    epoch, then again from the first); each costs the disk and prepare time of one encoding."""

    def validate(self) -> None:
        positive(self, "tokenizer", "min_freq", "max_vocab", "vocab_size", "train_sample")
        unit_interval(self.dropout, "tokenizer.dropout")
        if self.dropout and self.kind != "bpe":
            raise ConfigError(
                f"tokenizer.dropout ({self.dropout}) needs tokenizer.kind bpe, not {self.kind}; "
                "set tokenizer.dropout: 0"
            )
        if not 1 <= self.dropout_copies <= 255:
            raise ConfigError(
                f"tokenizer.dropout_copies must be 1 to 255, got {self.dropout_copies}"
            )
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
    activation: Literal["relu", "gelu", "swish"] = "relu"
    """The feed-forward network's activation; `swish` (SiLU) is Marian's (OPUS-MT models)."""
    positions: Literal["sinusoidal", "sinusoidal_halves", "learned"] = "sinusoidal"
    """`sinusoidal`: the paper's fixed encodings, sin and cos interleaved; `sinusoidal_halves`:
    the same waves with every sin in the first half of the dimensions and every cos in the second
    (Marian's layout, for imported models); `learned`: a trained table."""
    max_positions: int = 512
    """Longest sequence the position table covers (specials included)."""
    tie_embeddings: bool = False
    """Share the target embedding matrix with the output projection."""
    scale_embeddings: bool = True
    """Multiply token embeddings by sqrt(d_model) (the paper's; Marian's `scale_embedding`)."""
    source_sos: bool = True
    """The encoder reads [SOS] before the source, as this tool's runs were trained; false: the
    source and [EOS] only, as Marian models read it (set by `translator import`)."""

    def validate(self) -> None:
        positive(
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
        unit_interval(self.dropout, "model.dropout")
        unit_interval(self.attention_dropout, "model.attention_dropout")


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
    best_metric: str = "loss"
    """What `best.pt` is chosen by: `loss` (the lowest validation loss) or `bleu` (the highest
    greedy BLEU), on the validation split; or `NAME/loss`, `NAME/bleu` on the eval set NAME."""
    eval_sets: dict[str, str] | None = None
    """More sets scored at every evaluation, beside the validation split: a name for each file
    (any format `data.source` takes), e.g. `{dev: tatoeba-dev.jsonl, general: valid.tsv}`. Each
    is logged as its own NAME/loss, NAME/bleu and NAME/chrf curves, so forgetting shows while it
    happens. Never trained on."""
    init_from: str | None = None
    """Start from another run's weights and tokenizers (fine-tuning, adaptation): a run name
    under the weights directory, a run directory, or a checkpoint file. The model and tokenizer
    sections come from the parent; the optimizer, schedule and step count start afresh. The run
    records its parent in parent.json."""
    n_samples: int = 3
    checkpoint_every: int = 500
    average_last: int = 0
    """Keep the last K checkpoints written every checkpoint_every steps (step_N.pt) and, at the
    end of training, write averaged.pt, the mean of their weights (and of the final weights).
    `translate` and `validate` then use it. 0 keeps none."""
    on_nonfinite: Literal["stop", "skip"] = "stop"
    """A step whose loss is NaN/inf: `stop` the run, or `skip` the update and count it."""
    word_dropout: float = 0.0
    """Word dropout (Sennrich et al. 2016): in every training step, each source token is
    replaced by [UNK] with this probability, drawn afresh each step. Never at validation or
    decoding. 0 turns it off."""
    adam_beta2: float = 0.98
    """Adam's second-moment decay (the paper's 0.98; PyTorch's default is 0.999)."""
    ema_decay: float = 0.0
    """Also keep an exponential moving average of the weights, updated after every step with
    this decay (0.999 averages over about the last 1,000 steps; less in the first steps, as
    min(decay, (1 + step) / (10 + step))), and write it at the end of training as ema.pt, which
    `translate` and `validate` then use. 0 keeps none."""

    def validate(self) -> None:
        positive(
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
        non_negative(
            self, "train", "warmup_steps", "weight_decay", "eval_every", "n_samples", "average_last"
        )
        unit_interval(self.label_smoothing, "train.label_smoothing")
        unit_interval(self.ema_decay, "train.ema_decay")
        unit_interval(self.word_dropout, "train.word_dropout")
        if not 0 < self.adam_beta2 < 1:
            raise ConfigError(f"train.adam_beta2 must be in (0, 1), got {self.adam_beta2}")
        for name in self.eval_sets or {}:
            if not name or "/" in name or name == "valid":
                raise ConfigError(
                    f"train.eval_sets: {name!r} is no name for a set; a plain word other than "
                    "valid (the validation split's), e.g. dev"
                )
        self.best_set_and_measure()

    def best_set_and_measure(self) -> tuple[str, str]:
        """`best_metric` as (set, measure): ("valid", "loss") for `loss`, ("dev", "bleu")..."""
        name, _, measure = self.best_metric.rpartition("/")
        name = name or "valid"
        sets = ["valid", *(self.eval_sets or {})]
        if measure not in ("loss", "bleu") or name not in sets:
            choices = ", ".join(f"{s}/loss, {s}/bleu" for s in sets[1:])
            raise ConfigError(
                f"train.best_metric {self.best_metric!r}: choose loss, bleu"
                + (f", {choices}" if choices else "")
                + " (a set must be named in train.eval_sets)"
            )
        if measure == "bleu" and not self.eval_bleu:
            raise ConfigError(f"train.best_metric {self.best_metric} needs train.eval_bleu: true")
        return name, measure


@dataclass(frozen=True)
class DecodeConfig:
    beam: int = 1
    """1 = greedy; larger values run beam search."""
    alpha: float = 0.6
    """Length penalty exponent for beam search: ((5 + len) / 6) ** alpha, or len ** alpha with
    search `transformers`."""
    search: Literal["exact", "transformers"] = "exact"
    """`exact`: GNMT's length penalty, and a sentence's search stops only when no live
    hypothesis can still win; `transformers`: as transformers' `generate` searches (penalty
    len ** alpha, its early-stopping rule, [EOS] forced at the length budget), so that a model
    imported from it (`translator import`) translates as it did there."""
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

    split_sentences: bool = True
    """Each line (or pasted paragraph) is cut into its sentences, which are translated one by
    one (all in one batch) and put back with the spacing, line breaks, indentation and list
    markers they came with: a model learns from single sentences, and six sentences on a line
    come back as one garbled sentence without it. false: each line is translated whole."""
    recase: bool = True
    """A sentence typed all in capitals is translated as if written in sentence case, and its
    translation written in capitals: capitals are rare in any corpus, and its subword pieces
    are other pieces than the lower-case ones (`THE MEETING IS CANCELLED.` loops without)."""
    truecase: bool = True
    """A sentence typed with no capital letter (`is tom also coming`) is translated with the
    capitals the training data gives its words (`Is Tom also coming`: casing.json, learnt when
    the data is prepared), as is one typed in capitals; a run without casing.json skips it."""
    respell: bool = True
    """A word typed with a typo (`waht`, `annd`) is read as the word one typo away (two letters
    swapped, one doubled, one dropped) that the training data wrote at least 100 times as often
    (spelling.json, learnt when the data is prepared); a run without spelling.json skips it."""
    no_repeat_ngram: int = 4
    """A guard against runaway output: no output repeats a sequence of this many tokens (a
    source that repeats a longer one itself, as `ha ha ha ha`, lets its output repeat one token
    longer than that); a loop such as `ELLELLELL...` ends instead of filling the length budget.
    0 turns it off (CTranslate2's `no_repeat_ngram_size`: the same rule in both engines)."""
    max_run: int = 3
    """A second guard: no token follows itself more than this many times in a row (a source with
    a longer run of one token, as `ha ha ha ha`, lets its output have as long a run). The n-gram
    guard alone lets a piece come 4 times and a fifth start with it: `ig ig ig ig iger`. 0 turns
    it off. CTranslate2 decodes the rare output that holds a longer run again with the runs of
    every token suppressed (`suppress_sequences`), so clean input costs nothing."""

    def validate(self) -> None:
        positive(self, "decode", "beam", "batch_size")
        non_negative(self, "decode", "alpha", "max_len_a", "max_len_b")
        if self.no_repeat_ngram < 0 or self.no_repeat_ngram == 1:
            raise ConfigError(
                f"decode.no_repeat_ngram must be 0 (off) or 2 or more tokens, got "
                f"{self.no_repeat_ngram}"
            )
        if self.max_run < 0 or self.max_run == 1:
            raise ConfigError(
                f"decode.max_run must be 0 (off) or 2 or more tokens in a row, got {self.max_run}"
            )


@dataclass(frozen=True)
class ServeConfig:
    max_texts: int = 64
    """Most texts one `translator serve` request may carry; more get a 413 JSON error."""
    max_chars: int = 5000
    """Longest text (a sentence, or a pasted paragraph: it is cut into sentences), in characters,
    `translator serve` takes; longer gets a 413 JSON error."""
    max_beam: int = 16
    """Largest beam a request may ask for."""
    batch_window_ms: float = 5.0
    """How long the first waiting request waits for others to join its batch; 0: no wait."""
    max_batch_sentences: int = 64
    """Most sentences decoded together in one batch (whole requests, one beam per batch)."""
    max_queue: int = 1024
    """Most sentences waiting for a decoder; a request that would pass it gets a 503 JSON."""
    timeout_s: float = 30.0
    """A request not answered within this many seconds gets a 503 JSON."""

    def validate(self) -> None:
        positive(self, "serve", "max_texts", "max_chars", "max_beam", "max_batch_sentences")
        positive(self, "serve", "max_queue", "timeout_s")
        non_negative(self, "serve", "batch_window_ms")
        if self.max_queue < self.max_texts:
            raise ConfigError(
                f"serve.max_queue {self.max_queue} is below serve.max_texts {self.max_texts}: "
                f"the largest requests could never be queued; --set serve.max_queue="
                f"{self.max_texts} or more"
            )


@dataclass(frozen=True)
class DistillConfig:
    """`translator distill`: how the teacher translates the corpus, and what the student reads."""

    beam: int | None = None
    """The teacher's beam while translating the corpus; null: its own decode.beam."""
    mbr: bool | None = None
    """The teacher's decode.mbr while translating the corpus; null: its own."""
    keep_original: bool = False
    """Train the student on the original pairs as well as on the teacher's translations."""
    min_chrf: float = 0.0
    """A teacher translation whose sentence chrF against the reference is below this is replaced
    by the reference (the Bergamot pipeline's filter); 0 keeps every translation."""
    quantization: str = "int8"
    """How a run teacher is exported for CTranslate2 to translate the corpus (when installed)."""
    chunk: int = 4096
    """Sentences translated between two saves of the work done: an interrupted translation
    loses at most this many."""

    def validate(self) -> None:
        positive(self, "distill", "beam", "chunk")
        if not 0.0 <= self.min_chrf <= 100.0:
            raise ConfigError(
                f"distill.min_chrf must be 0 to 100 (sentence chrF), got {self.min_chrf}"
            )
        if self.quantization not in ("int8", "int8_float32", "float32", "bfloat16"):
            raise ConfigError(
                f"distill.quantization {self.quantization!r}: choose int8, int8_float32, float32 "
                "or bfloat16"
            )


@dataclass(frozen=True)
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (YAML- and checkpoint-safe)."""
        return dataclasses.asdict(self)
