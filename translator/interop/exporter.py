"""`translator export --format transformers`: a run as a Marian directory that transformers'
`MarianMTModel` and `MarianTokenizer` load (and transformers 4's `pipeline("translation")`).

What Marian can hold: post-norm layers, sinusoids in halves, a source read without [SOS], and the
sentencepiece tokenizer kind on both sides (imported runs, and runs trained with
configs/sentencepiece.yaml). Anything else is refused in one line naming the setting. The
vocabulary is written in Marian's order (</s> 0, <unk> 1, the pieces, <pad> last); the decoder's
start row (this tool's [SOS]) becomes <pad>'s, as a Marian decoder starts from <pad>.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

import torch

from translator.data.sentencepiece import SentencePieceTokenizer
from translator.durable import published_dir
from translator.errors import ConfigError, TranslatorError
from translator.inference.predict import LoadedModel
from translator.interop.marian import HF_EXTRA, weight_names
from translator.run.names import IMPORTED
from translator.specials import EOS_ID, SOS_ID, UNK_ID

log = logging.getLogger("translator")

MARIAN_SHAPE = {"norm": "post", "positions": "sinusoidal_halves", "source_sos": False}
NOT_CARRIED = {
    "no_repeat_ngram": 0,
    "max_run": 0,
    "mbr": False,
    "ban_unk": False,
}


def import_transformers() -> Any:
    """transformers, quiet (no progress bars, no advice to install sacremoses, which Marian
    tokenization never uses), or the one-line error naming the pip command."""
    try:
        import transformers
    except ImportError:
        raise TranslatorError(f"--format transformers needs transformers: {HF_EXTRA}") from None
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
    return transformers


def check_marian_shape(loaded: LoadedModel) -> None:
    """Refuse, in one line, a run that a Marian model cannot hold."""
    for side, tok in (("source", loaded.src_tokenizer), ("target", loaded.tgt_tokenizer)):
        if not isinstance(tok, SentencePieceTokenizer):
            raise ConfigError(
                f"--format transformers: the run's {side} tokenizer is not the sentencepiece "
                "kind (Marian models read SentencePiece pieces); train the run with "
                "tokenizer.kind: sentencepiece (configs/sentencepiece.yaml), or export it to "
                "CTranslate2 without --format"
            )
    m = loaded.config.model
    for key, want in MARIAN_SHAPE.items():
        if getattr(m, key) != want:
            raise ConfigError(
                f"--format transformers: model.{key} is {getattr(m, key)!r}, a Marian model has "
                f"{want!r}; train with configs/sentencepiece.yaml's model section"
            )


def marian_rows(n: int, pad_last: bool = True) -> list[int]:
    """For each Marian id, the row of this tool's ids it takes: </s>, <unk>, the pieces, then
    <pad> from [SOS] (the row the decoder starts from), as OPUS-MT lays them out; with two
    vocabularies <pad> comes third, so that its one id is in both."""
    if not pad_last:
        return [EOS_ID, UNK_ID, SOS_ID, *range(4, n)]
    return [EOS_ID, UNK_ID, *range(4, n), SOS_ID]


def export_transformers(loaded: LoadedModel, output: Path) -> None:
    """Write `loaded` as a Marian directory at `output` (created; must not exist)."""
    transformers = import_transformers()
    check_marian_shape(loaded)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError(f"--output {output}: already exists; remove it or choose a new directory")
    src: SentencePieceTokenizer = loaded.src_tokenizer  # type: ignore[assignment]
    tgt: SentencePieceTokenizer = loaded.tgt_tokenizer  # type: ignore[assignment]
    shared = loaded.config.tokenizer.shared
    src_rows = marian_rows(src.get_vocab_size(), shared)
    tgt_rows = marian_rows(tgt.get_vocab_size(), shared)
    pad = tgt_rows.index(SOS_ID)
    config = _marian_config(transformers, loaded, len(src_rows), len(tgt_rows), pad)
    model = transformers.MarianMTModel(config)
    missing, unexpected = model.load_state_dict(
        _state(loaded, src_rows, tgt_rows, shared), strict=False
    )
    # embed_positions are computed by transformers; tied copies come from their source
    left = [k for k in missing if "embed_positions" not in k and k not in _tied(shared)]
    if left or unexpected:
        raise TranslatorError(f"the Marian model does not fit: missing {left}, extra {unexpected}")
    model.generation_config = _generation(transformers, loaded, pad)
    try:
        with published_dir(output) as tmp:
            model.save_pretrained(str(tmp))
            _save_tokenizer(transformers, src, tgt, shared, tmp)
            (tmp / "README.md").write_text(model_card(loaded), encoding="utf-8")
    except OSError as exc:
        raise TranslatorError(f"--output {output}: cannot write ({exc.strerror or exc})") from None
    for difference in differences(loaded):
        log.warning("warning: %s", difference)


def differences(loaded: LoadedModel) -> list[str]:
    """Where transformers' `generate` will translate otherwise than `translator translate`: the
    decode settings it has no equivalent for."""
    d = loaded.config.decode
    found = [
        f"decode.{key} is {getattr(d, key)} here; transformers' generate has no such setting, so "
        "its translations may differ from translator translate's"
        for key, plain in NOT_CARRIED.items()
        if getattr(d, key) != plain
    ]
    reread = [k for k, on in (("recase", d.recase), ("truecase", d.truecase and loaded.casing),
                              ("respell", d.respell and loaded.spelling)) if on]  # fmt: skip
    if reread:
        found.append(
            f"decode.{'/'.join(reread)}: translator reads typed text again before translating "
            "(casing.json, spelling.json); transformers translates the text as typed"
        )
    if d.max_len_a:
        found.append(
            f"decode.max_len_a is {d.max_len_a}: transformers has one length budget for every "
            f"sentence (max_length {loaded.config.model.max_positions} written); a runaway "
            "output stops at another length there"
        )
    if d.beam > 1 and d.search != "transformers":
        found.append(
            "decode.search is exact; transformers' beam search stops by its own rule "
            "(decode.search: transformers decodes here as it does there)"
        )
    return found


def _tied(shared: bool) -> set[str]:
    tied = {"lm_head.weight", "model.decoder.embed_tokens.weight"}
    return tied | ({"model.encoder.embed_tokens.weight"} if shared else set())


def _marian_config(
    transformers: Any, loaded: LoadedModel, src_size: int, tgt_size: int, pad: int
) -> Any:
    m = loaded.config.model
    return transformers.MarianConfig(
        vocab_size=src_size,
        decoder_vocab_size=tgt_size,
        share_encoder_decoder_embeddings=loaded.config.tokenizer.shared,
        tie_word_embeddings=m.tie_embeddings,
        d_model=m.d_model,
        encoder_layers=m.encoder_layers,
        decoder_layers=m.decoder_layers,
        encoder_attention_heads=m.n_heads,
        decoder_attention_heads=m.n_heads,
        encoder_ffn_dim=m.d_ff,
        decoder_ffn_dim=m.d_ff,
        activation_function=m.activation,
        max_position_embeddings=m.max_positions,
        scale_embedding=m.scale_embeddings,
        dropout=m.dropout,
        attention_dropout=m.attention_dropout,
        activation_dropout=0.0,
        pad_token_id=pad,
        eos_token_id=0,
        forced_eos_token_id=0,
        decoder_start_token_id=pad,
    )


def _state(
    loaded: LoadedModel, src_rows: list[int], tgt_rows: list[int], shared: bool
) -> dict[str, torch.Tensor]:
    ours = loaded.model.state_dict()
    m = loaded.config.model
    state = {theirs: ours[name] for name, theirs in weight_names(
        m.encoder_layers, m.decoder_layers).items()}  # fmt: skip
    src_embed = ours["src_embed.tokens.weight"][torch.tensor(src_rows)]
    tgt_embed = ours["tgt_embed.tokens.weight"][torch.tensor(tgt_rows)]
    if shared:
        state["model.shared.weight"] = src_embed
    else:
        state["model.encoder.embed_tokens.weight"] = src_embed
        state["model.decoder.embed_tokens.weight"] = tgt_embed
    if not m.tie_embeddings:
        state["lm_head.weight"] = ours["output.weight"][torch.tensor(tgt_rows)]
    state["final_logits_bias"] = ours["output.bias"][torch.tensor(tgt_rows)][None, :]
    return {k: v.detach().float().clone() for k, v in state.items()}


def _generation(transformers: Any, loaded: LoadedModel, pad: int) -> Any:
    d = loaded.config.decode
    max_length = (d.max_len_b + 1) if d.max_len_a == 0 else loaded.config.model.max_positions
    return transformers.GenerationConfig(
        num_beams=d.beam,
        length_penalty=d.alpha,
        max_length=min(max_length, loaded.config.model.max_positions),
        bad_words_ids=[[pad]],
        decoder_start_token_id=pad,
        pad_token_id=pad,
        eos_token_id=0,
        forced_eos_token_id=0,
    )


def _save_tokenizer(
    transformers: Any,
    src: SentencePieceTokenizer,
    tgt: SentencePieceTokenizer,
    shared: bool,
    folder: Path,
) -> None:
    (folder / "source.spm").write_bytes(src.model)
    (folder / "target.spm").write_bytes(tgt.model)
    vocabs = {"vocab.json": src} if shared else {"vocab.json": src, "target_vocab.json": tgt}
    for name, tok in vocabs.items():
        pieces = tok.marian_vocab()
        ordered = [pieces[i] for i in marian_rows(len(pieces), shared)]
        (folder / name).write_text(
            json.dumps({p: i for i, p in enumerate(ordered)}, ensure_ascii=False, indent=1),
            encoding="utf-8",
        )
    tokenizer = transformers.MarianTokenizer(
        str(folder / "source.spm"),
        str(folder / "target.spm"),
        str(folder / "vocab.json"),
        target_vocab_file=None if shared else str(folder / "target_vocab.json"),
        source_lang="en",
        target_lang="it",
        separate_vocabs=not shared,
    )
    tokenizer.save_pretrained(str(folder))


def model_card(loaded: LoadedModel) -> str:
    """README.md of the exported directory: what it is, its data, steps, scores, lineage."""
    run_dir = loaded.checkpoint.parent
    cfg = loaded.config
    lines = [
        f"# {run_dir.name}: English→Italian translator",
        "",
        f"Exported by `translator export --format transformers` from run `{run_dir.name}` "
        f"(checkpoint `{loaded.checkpoint.name}`, step {loaded.step:,}).",
        "",
        "```python",
        "from transformers import MarianMTModel, MarianTokenizer",
        'model = MarianMTModel.from_pretrained("PATH/TO/THIS/DIRECTORY")',
        'tokenizer = MarianTokenizer.from_pretrained("PATH/TO/THIS/DIRECTORY")',
        'batch = tokenizer(["How are you?"], return_tensors="pt", padding=True)',
        "print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))",
        "```",
        "",
        'With transformers 4, `pipeline("translation", model=...)` runs the same steps.',
        "",
        "## Model",
        "",
        f"Marian encoder-decoder: d_model {cfg.model.d_model}, {cfg.model.encoder_layers}+"
        f"{cfg.model.decoder_layers} layers, {cfg.model.n_heads} heads, feed-forward "
        f"{cfg.model.d_ff}, {cfg.model.activation}; "
        f"{'one shared' if cfg.tokenizer.shared else 'separate'} SentencePiece vocabulary. "
        f"Decoding: beam {cfg.decode.beam}, length penalty {cfg.decode.alpha}.",
        "",
        "## Data and lineage",
        "",
    ]
    lines += [f"- {line}" for line in _lineage(run_dir, cfg)]
    lines += ["", "## Scores (`translator validate`)", ""]
    scores = _scores(run_dir)
    if scores:
        lines += ["| data | step | beam | sentences | BLEU | chrF |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {s.get('data')} | {s.get('step')} | {s.get('beam')} | {s.get('sentences')} "
            f"| {s.get('bleu')} | {s.get('chrf')} |"
            for s in scores
        ]
    else:
        lines.append("None recorded: run `translator validate --run NAME` before exporting.")
    return "\n".join(lines) + "\n"


def _lineage(run_dir: Path, cfg: Any) -> list[str]:
    """The run's data, then each run it came from (parent.json), back to an import or a run
    trained from nothing."""
    found = [] if (run_dir / IMPORTED).is_file() else [f"trained on `{cfg.data.source}`"]
    for _ in range(10):  # a chain of runs made from runs; 10 is far more than any has
        imported, parent = _record(run_dir / IMPORTED), _record(run_dir / "parent.json")
        if imported:
            where = imported.get("hub") or imported.get("source")
            found.append(f"imported from `{where}` ({imported.get('revision') or 'a directory'})")
            break
        if not parent:
            break
        found.append(
            f"trained from run `{parent.get('run')}` (`{parent.get('checkpoint')}`, "
            f"step {parent.get('step')})"
        )
        run_dir = Path(str(parent.get("path", "")))
    return found


def _record(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def _scores(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "scores.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows[-10:]
