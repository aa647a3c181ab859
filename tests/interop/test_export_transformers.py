"""A run exported with --format transformers is a Marian directory that transformers loads and
translates with exactly as `translator translate` does; imported again, it is the same run.
The CTranslate2 export of an imported model agrees with transformers' greedy search."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from marian_models import dev

from translator.export.convert import export_model
from translator.export.engine import load_exported, translate_exported
from translator.inference.predict import LoadedModel, load_model, translate_sentences
from translator.interop.exporter import export_transformers
from translator.interop.importer import import_model

N = 200


def load(run_dir: Path) -> LoadedModel:
    return load_model(run_dir / "latest.pt", run_dir, torch.device("cpu"))


def whole_lines(loaded: LoadedModel, beam: int) -> LoadedModel:
    """The run translating each line whole, as the pipeline does, with `beam`."""
    decode = dataclasses.replace(loaded.config.decode, split_sentences=False, beam=beam)
    loaded.config = dataclasses.replace(loaded.config, decode=decode)
    return loaded


@pytest.fixture(scope="module")
def exported(imported: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "model"
    export_transformers(load(imported), out)
    return out


def hf_translate(model_dir: Path, sentences: list[str], beam: int) -> list[str]:
    """What pipeline("translation") did (transformers 5 removed that task): the directory's own
    tokenizer and model, `generate` with its generation config, the specials skipped."""
    from transformers import MarianMTModel, MarianTokenizer

    model = MarianMTModel.from_pretrained(str(model_dir)).eval()
    tok = MarianTokenizer.from_pretrained(str(model_dir))
    out = []
    for i in range(0, len(sentences), 50):
        batch = tok(sentences[i : i + 50], return_tensors="pt", padding=True)
        out += tok.batch_decode(model.generate(**batch, num_beams=beam), skip_special_tokens=True)
    return out


@pytest.mark.parametrize("beam", [1, 4])
def test_transformers_translates_as_translate(imported: Path, exported: Path, beam: int) -> None:
    sentences = [s for s, _ in dev(N)]
    theirs = hf_translate(exported, sentences, beam)
    ours = translate_sentences(whole_lines(load(imported), beam), sentences)
    differ = [(s, a, b) for s, a, b in zip(sentences, ours, theirs, strict=True) if a != b]
    assert not differ, f"{len(differ)} of {N} differ, e.g. {differ[0]}"


def test_import_of_the_export_is_the_same_run(
    imported: Path, exported: Path, tmp_path: Path
) -> None:
    again = load(import_model(str(exported), "again", tmp_path / "weights"))
    first = load(imported)
    assert again.src_tokenizer.to_str() == first.src_tokenizer.to_str()
    assert again.tgt_tokenizer.to_str() == first.tgt_tokenizer.to_str()
    a, b = first.model.state_dict(), again.model.state_dict()
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert first.config.decode == again.config.decode


def test_the_card_says_what_the_model_is(exported: Path) -> None:
    card = (exported / "README.md").read_text(encoding="utf-8")
    assert "imported from" in card and "generate(" in card and "step 0" in card


def test_ctranslate2_agrees_with_transformers_greedy(
    marian: Path, imported: Path, tmp_path: Path
) -> None:
    """float32: every output (int8 is measured on a base-shape model by scripts/bench_import.py;
    on these random weights, whose outputs are near-ties of one token repeated, it is no test)."""
    quantization, least = "float32", 1.0
    pytest.importorskip("ctranslate2")
    from transformers import MarianMTModel, MarianTokenizer

    out = tmp_path / quantization
    export_model(load(imported), out, quantization)
    engine = load_exported(out)
    engine.config = dataclasses.replace(
        engine.config,
        decode=dataclasses.replace(engine.config.decode, split_sentences=False, beam=1),
    )
    sentences = [s for s, _ in dev(N)]
    model = MarianMTModel.from_pretrained(str(marian)).eval()
    tok = MarianTokenizer.from_pretrained(str(marian))
    theirs = []
    for i in range(0, N, 50):
        ids = model.generate(**tok(sentences[i : i + 50], return_tensors="pt", padding=True),
                             num_beams=1)  # fmt: skip
        theirs += tok.batch_decode(ids, skip_special_tokens=True)
    ours = translate_exported(engine, sentences, beam=1)
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    assert same >= least * N, f"{same} of {N} agree"
