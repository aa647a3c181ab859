"""`translator validate --model DIR`: score an exported model on its run's validation split.

Decoding and the loss come from CTranslate2 (`translate_batch`, `score_batch`); the validation split
is rebuilt by the same data code as `validate --run` from the split and tokenizers the export
carries, so nothing is written into DIR.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

from translator.data.tokenizer import decode_ids, save_tokenizer
from translator.errors import ConfigError, DataError
from translator.export.engine import ExportedModel, decode_exported, load_exported
from translator.metrics import corpus_scores
from translator.run.names import tokenizer_file

log = logging.getLogger("translator")


def exported_loss(
    model: ExportedModel, sources: list[list[int]], targets: list[list[int]]
) -> float:
    """Mean negative log-likelihood per target token ([EOS] included), as `validation_loss`."""
    tgt_tokens = {i: t for t, i in model.tgt_ids.items()}
    total, count = 0.0, 0
    size = model.config.decode.batch_size
    for start in range(0, len(sources), size):
        results = model.translator.score_batch(
            [[model.src_tokens[t] for t in s] for s in sources[start : start + size]],
            [[tgt_tokens[t] for t in ids] for ids in targets[start : start + size]],
            max_input_length=0,
        )
        for result in results:
            total -= sum(result.log_probs)
            count += len(result.log_probs)
    return total / count if count else math.nan


def validate_model_command(
    model_dir: Path,
    beam: int | None,
    output: Path | None,
    config_path: Path | None,
    overrides: list[str],
    data_file: Path | None = None,
) -> None:
    """Loss, BLEU and chrF of an exported model on the validation split of the run it came from,
    or on the pairs of `data_file`."""
    from translator.data.prepare import prepare_data
    from translator.inference.evaluate import Validation, format_validation
    from translator.inference.predict import override_config, resolve_beam, write_lines
    from translator.run.paths import RunPaths

    if output is not None and not output.resolve().parent.is_dir():
        raise ConfigError(f"--output {output}: no directory {output.parent}")
    model = load_exported(model_dir)
    model.config = override_config(model.config, config_path, overrides, "validate")
    beam = resolve_beam(beam, model.config)
    if data_file is not None:
        return _validate_file(model, model_dir, data_file, beam, output)
    if not (model_dir / "split.json").is_file():
        raise DataError(f"--model {model_dir}: no split.json; export the run again to score it")
    with tempfile.TemporaryDirectory() as tmp:  # prepare_data caches beside the split: not in DIR
        shutil.copy(model_dir / "split.json", Path(tmp) / "split.json")
        save_tokenizer(model.src_tokenizer, tokenizer_file(Path(tmp), "src"))
        save_tokenizer(model.tgt_tokenizer, tokenizer_file(Path(tmp), "tgt"))  # shared: one file
        data = prepare_data(model.config, RunPaths(model.run, Path(tmp) / "runs", Path(tmp)))
    if len(data.valid) == 0:
        raise DataError(f"--model {model_dir}: its validation split is empty; nothing to score")
    sources = [data.valid[i]["encoder_input"] for i in range(len(data.valid))]
    targets = data.valid.tgt_ids
    loss = exported_loss(model, sources, targets)
    chars = [len(src) for src, _ in data.valid_pairs]  # bounds decode.mbr, as when translating
    outputs = decode_exported(model, sources, beam, chars)
    hypotheses = [decode_ids(model.tgt_tokenizer, o) for o in outputs]
    scores = corpus_scores(hypotheses, [ref for _, ref in data.valid_pairs])
    if output is not None:
        write_lines(output, hypotheses)
    shown = SimpleNamespace(
        config=model.config, checkpoint=f"{model_dir} (CTranslate2 {model.arithmetic})"
    )
    shown.step = model.step
    samples = [(s, r, h) for (s, r), h in zip(data.valid_pairs, hypotheses, strict=True)]
    result = Validation(shown, model.run, beam, loss, scores, hypotheses, samples[:3])  # type: ignore[arg-type]
    print(format_validation(result))


def _validate_file(
    model: ExportedModel, model_dir: Path, data_file: Path, beam: int, output: Path | None
) -> None:
    """`validate --model DIR --data FILE`: as `validate --run R --data FILE`, by CTranslate2."""
    from translator.data.testsets import encode_eval_sets, read_test_pairs
    from translator.export.engine import translate_exported
    from translator.inference.evaluate import Validation, format_validation
    from translator.inference.predict import write_lines

    pairs = read_test_pairs(str(data_file), model.config.data, "--data")
    hypotheses = translate_exported(model, [src for src, _ in pairs], beam)
    scores = corpus_scores(hypotheses, [ref for _, ref in pairs])
    (encoded,) = encode_eval_sets(
        {"data": pairs}, model.src_tokenizer, model.tgt_tokenizer, model.config.data.max_len
    )
    sources = [encoded.dataset[i]["encoder_input"] for i in range(len(encoded.dataset))]
    loss = exported_loss(model, sources, encoded.dataset.tgt_ids)
    if output is not None:
        write_lines(output, hypotheses)
    shown = SimpleNamespace(
        config=model.config, checkpoint=f"{model_dir} (CTranslate2 {model.arithmetic})"
    )
    shown.step = model.step
    samples = [(s, r, h) for (s, r), h in zip(pairs, hypotheses, strict=True)][:3]
    result = Validation(shown, model.run, beam, loss, scores, hypotheses, samples, str(data_file))  # type: ignore[arg-type]
    print(format_validation(result))
