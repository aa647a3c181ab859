"""`translator export` to CTranslate2, and `translate --model DIR`: same translations, no torch."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import cli, export, make_pairs, train_tiny

from translator.config import Config, ModelConfig, load_config
from translator.data.tokenizer import train_tokenizer
from translator.errors import CheckpointError, ConfigError
from translator.export import engine
from translator.export.convert import check_exportable, export_model
from translator.export.engine import load_exported, translate_exported
from translator.inference.predict import (
    LoadedModel,
    decode_in_batches,
    load_model,
    translate_sentences,
)
from translator.inference.text import (
    encode_sources,
    guard_size,
    longest_run,
    repeats_ngram,
    run_limit,
)
from translator.metrics import corpus_scores
from translator.model.transformer import build_model

CPU = torch.device("cpu")
HELD_OUT = make_pairs(300, seed=7)  # toy sentences the tiny run did not train on
SOURCES = [en for en, _ in HELD_OUT]


def agreement(a: list[str], b: list[str]) -> float:
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def random_model(tmp_path: Path, joint: bool = False, **model: object) -> LoadedModel:
    """An untrained model with every weight perturbed (LayerNorms and biases too)."""
    sizes = ["model.d_model=32", "model.n_heads=2", "model.d_ff=64", "decode.ban_unk=true"]
    cfg = load_config(None, sizes)
    cfg = dataclasses.replace(
        cfg,
        model=dataclasses.replace(cfg.model, encoder_layers=2, decoder_layers=2, **model),
    )
    pairs = make_pairs(200)
    src_tok = train_tokenizer([en for en, _ in pairs] + ([it for _, it in pairs] if joint else []))
    tgt_tok = src_tok if joint else train_tokenizer([it for _, it in pairs])
    with torch.random.fork_rng():  # the same model every run: a near-tie cannot come and go
        torch.manual_seed(0)
        net = build_model(cfg.model, src_tok.get_vocab_size(), tgt_tok.get_vocab_size())
    if joint:  # one embedding matrix shared by encoder, decoder and output
        net.src_embed.tokens.weight = net.tgt_embed.tokens.weight
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    net.eval()
    return LoadedModel(net, cfg, src_tok, tgt_tok, tmp_path / "run" / "best.pt", 7, CPU)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"norm": "post"},
        {"activation": "gelu"},
        {"positions": "learned"},
        {"tie_embeddings": True},
        {"norm": "post", "activation": "gelu", "positions": "learned", "tie_embeddings": True},
        {"tie_embeddings": True, "joint": True},
    ],
    ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "defaults",
)
def test_every_model_option_exports_to_the_same_greedy_output(
    tmp_path: Path, options: dict
) -> None:
    options = dict(options)
    loaded = random_model(tmp_path, joint=options.pop("joint", False), **options)
    export_model(loaded, tmp_path / "ct2", "float32")
    exported = load_exported(tmp_path / "ct2", threads=1)
    assert exported.step == 7
    sentences = SOURCES[:100]
    reference = translate_sentences(loaded, sentences, beam=1)
    assert len(set(reference)) > 4  # not one answer for all: the comparison means something
    assert agreement(translate_exported(exported, sentences, beam=1), reference) >= 0.98


def loose_and_guarded(
    loaded: LoadedModel, exported: engine.ExportedModel, sources: list[list[int]], beam: int,
    guard: dict[str, int],
) -> dict[str, tuple[list[list[int]], list[list[int]]]]:  # fmt: skip
    """Each engine's outputs without the repeat guards, then with `guard` on: (loose, guarded).
    Greedy outputs of the two engines agree either way."""
    outputs: dict[str, list[list[list[int]]]] = {"torch": [], "ct2": []}
    base = {"no_repeat_ngram": 0, "max_run": 0}
    for guards in (base, base | guard):
        decode = dataclasses.replace(loaded.config.decode, max_len_a=3.0, **guards)
        exported.config = dataclasses.replace(exported.config, decode=decode)
        outputs["torch"].append(decode_in_batches(loaded.model, sources, decode, CPU, beam))
        outputs["ct2"].append(engine.decode_exported(exported, sources, beam))
        if beam == 1:
            assert agreement(outputs["ct2"][-1], outputs["torch"][-1]) >= 0.95
    return {which: (pair[0], pair[1]) for which, pair in outputs.items()}


@pytest.mark.parametrize("beam", [1, 4])
def test_the_repeat_guard_is_the_same_rule_in_both_engines(tmp_path: Path, beam: int) -> None:
    """A random model loops; with the guard neither engine repeats two tokens (more where the
    source repeats more itself), and greedy outputs agree.
    (Beam outputs are not compared: CTranslate2 ranks its beam with another length penalty.)
    Output ids, not text: a random model writes specials, which print as nothing."""
    loaded = random_model(tmp_path)
    export_model(loaded, tmp_path / "ct2", "float32")
    exported = load_exported(tmp_path / "ct2", threads=1)
    sentences = SOURCES[:60] + ["red red red red red red ."]
    sources = encode_sources(loaded.src_tokenizer, sentences, 100)
    outputs = loose_and_guarded(loaded, exported, sources, beam, {"no_repeat_ngram": 2})
    for which in ("torch", "ct2"):
        loose, guarded = outputs[which]
        for out, src in zip(guarded, sources, strict=True):
            assert not repeats_ngram(out, guard_size(src, 2)), (src, out)
        assert sum(g != o for g, o in zip(guarded, loose, strict=True)) > 10  # the guard acted
    assert guard_size(sources[-1], 2) > 2  # the source that repeats itself has a looser guard


@pytest.mark.parametrize("beam", [1, 4])
def test_the_run_limit_holds_in_both_engines(tmp_path: Path, beam: int) -> None:
    """A random model drawn to one token writes it many times in a row; with `decode.max_run`
    neither engine lets a token follow itself more often (CTranslate2 decodes the outputs that
    did again, with such runs suppressed), and greedy outputs agree."""
    loaded = random_model(tmp_path)
    with torch.no_grad():
        loaded.model.output.bias[10] += 3.0
    export_model(loaded, tmp_path / "ct2", "float32")
    exported = load_exported(tmp_path / "ct2", threads=1)
    sources = encode_sources(loaded.src_tokenizer, SOURCES[:60], 100)
    outputs = loose_and_guarded(loaded, exported, sources, beam, {"max_run": 2})
    for which in ("torch", "ct2"):
        loose, guarded = outputs[which]
        assert sum(longest_run(out) > 2 for out in loose) > 10  # runs to stop
        for out, src in zip(guarded, sources, strict=True):
            assert longest_run(out) <= run_limit(src, 2), (src, out)


@pytest.mark.parametrize("joint", [True, False])
def test_a_shared_tokenizer_is_exported_once(tmp_path: Path, joint: bool) -> None:
    loaded = random_model(tmp_path, joint=joint, tie_embeddings=joint)
    export_model(loaded, tmp_path / "ct2", "int8")
    assert (tmp_path / "ct2" / "tokenizer_tgt.json").exists() is not joint
    exported = load_exported(tmp_path / "ct2", threads=1)
    assert exported.tgt_tokenizer.to_str() == loaded.tgt_tokenizer.to_str()


def test_a_shared_tokenizer_export_validates_and_a_missing_target_one_is_one_line(
    tmp_path: Path,
) -> None:
    """`validate --model` scores an export written with one tokenizer file; an export of two
    vocabularies that lost its target tokenizer says so instead of using the source one."""
    train_tiny(tmp_path, 20, "tokenizer.shared=true", "model.tie_embeddings=true")
    out = export(tmp_path, "float32")
    assert not (out / "tokenizer_tgt.json").exists()
    done = cli(tmp_path, "validate", "--model", out.name, "--beam", "1")
    assert done.returncode == 0, done.stderr
    assert "BLEU" in done.stdout
    two = random_model(tmp_path / "two")
    export_model(two, tmp_path / "two-ct2", "float32")
    (tmp_path / "two-ct2" / "tokenizer_tgt.json").unlink()
    with pytest.raises(CheckpointError, match="no tokenizer_tgt.json.*two vocabularies"):
        load_exported(tmp_path / "two-ct2", threads=1)


def test_an_unmapped_option_is_refused_in_one_line() -> None:
    bad = dataclasses.replace(ModelConfig(), norm="rms")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"model\.norm='rms' cannot be exported.*supported"):
        check_exportable(bad)
    check_exportable(ModelConfig())


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run trained for 150 steps, exported as float32 and int8."""
    root = tmp_path_factory.mktemp("export")
    train_tiny(root, 150)
    export(root, "float32")
    export(root, "int8")
    return root


def test_float32_export_matches_pytorch_greedy_and_int8_is_close(trained: Path) -> None:
    run_dir = trained / "weights" / "tiny"
    loaded = load_model(run_dir / "best.pt", run_dir, CPU)
    references = [it for _, it in HELD_OUT]
    torch_out = translate_sentences(loaded, SOURCES, beam=1)
    f32 = translate_exported(load_exported(trained / "ct2-float32", 1), SOURCES, beam=1)
    i8 = translate_exported(load_exported(trained / "ct2-int8", 1), SOURCES, beam=1)
    bleu_torch = corpus_scores(torch_out, references).bleu
    bleu_f32 = corpus_scores(f32, references).bleu
    bleu_i8 = corpus_scores(i8, references).bleu
    assert bleu_torch > 5  # the model learned something, so the comparison means something
    assert agreement(f32, torch_out) >= 0.98
    assert abs(bleu_f32 - bleu_torch) <= 0.2
    assert agreement(i8, f32) >= 0.85  # 0.94-0.96 over 5 seeds; 0.36-0.46 when int8 saturates
    assert abs(bleu_i8 - bleu_f32) <= 0.5


@pytest.mark.parametrize(
    ("machine", "vnni", "quantization", "expected"),
    [
        ("x86_64", False, "int8", "float32"),  # oneDNN's int8 would saturate, MKL is slow on AMD
        ("x86_64", False, "int8_float32", "float32"),
        ("x86_64", True, "int8", "default"),
        ("x86_64", False, "float32", "default"),
        ("aarch64", False, "int8", "default"),
    ],
)
def test_int8_is_computed_in_float32_only_where_int8_products_saturate(
    monkeypatch: pytest.MonkeyPatch, machine: str, vnni: bool, quantization: str, expected: str
) -> None:
    monkeypatch.setattr(engine.platform, "machine", lambda: machine)
    monkeypatch.setattr(engine, "has_int8_dot_product", lambda: vnni)
    assert engine.cpu_compute_type(quantization) == expected


def test_a_few_sentences_cut_in_pieces_for_two_workers_come_back_in_order(trained: Path) -> None:
    # 40 sentences: 4 like-length pieces of 10 for 2 workers (as serve's batches are); for one
    # worker, like-length batches of 32 and 8. Greedy float32 gives each sentence its own output.
    few = SOURCES[:40]
    one = translate_exported(load_exported(trained / "ct2-float32", 1), few, beam=1)
    two = translate_exported(load_exported(trained / "ct2-float32", 2), few, beam=1)
    assert two == one
    assert len(set(one)) > 20  # different sentences: a mix-up would show


def test_translate_model_cli_matches_run_and_never_imports_torch(trained: Path) -> None:
    lines = ["one cat and two dogs .", "", "the red house is big ."]
    by_run = cli(trained, "translate", "--run", "tiny", "--beam", "1", *lines)
    assert by_run.returncode == 0, by_run.stderr
    ct2 = trained / "ct2-float32"
    env_cmd = [sys.executable, "-X", "importtime", "-m", "translator", "translate", "--model"]
    by_model = subprocess.run(
        [*env_cmd, str(ct2), "--beam", "1", *lines], capture_output=True, text=True, timeout=60
    )
    assert by_model.returncode == 0, by_model.stderr
    assert by_model.stdout == by_run.stdout
    assert by_model.stdout.splitlines()[1] == ""  # one line out per line in, blank stays blank
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in by_model.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "ctranslate2" in imported and "torch" not in imported

    piped = cli(trained, "translate", "--model", str(ct2), "--beam", "1")
    assert piped.returncode == 0  # stdin closed: nothing in, nothing out
    stdin = subprocess.run(
        [sys.executable, "-m", "translator", "translate", "--model", str(ct2), "--beam", "1"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stdin.stdout == by_run.stdout


def test_export_and_model_errors_are_one_line(trained: Path) -> None:
    cases = [
        (["export", "--run", "tiny", "--output", "ct2-float32"], "already exists"),
        (["export", "--run", "tiny", "--output", "x", "--quantization", "int4"], "choose one of"),
        (["translate", "--model", "nowhere", "hi"], "no translator.json there"),
        (["translate", "--model", "ct2-int8", "--run", "tiny", "hi"], "exclude each other"),
        (["translate", "--model", "ct2-int8", "--set", "model.d_model=8", "hi"], "decode.*"),
    ]
    for args, message in cases:
        done = cli(trained, *args)
        assert done.returncode != 0, args
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_missing_ctranslate2_names_the_pip_command(trained: Path) -> None:
    code = (
        "import sys; sys.modules['ctranslate2'] = None; sys.argv = ['translator', *sys.argv[1:]]; "
        "from translator.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "translate", "--model", "ct2-int8", "hi"],
        cwd=trained,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'error: CTranslate2 is not installed; install it with: pip install -e ".[fast]" '
        "(or pip install ctranslate2)"
    )


def test_exported_config_keeps_the_run_decoding_settings(trained: Path) -> None:
    exported = load_exported(trained / "ct2-int8", 1)
    run_config = load_model(trained / "weights/tiny/best.pt", trained / "weights/tiny", CPU).config
    assert isinstance(exported.config, Config)
    assert exported.config.decode == run_config.decode
    assert exported.quantization == "int8" and exported.run == "tiny"


def test_the_casing_table_travels_with_the_run_and_both_engines_use_it(trained: Path) -> None:
    """casing.json is learnt when the data is prepared, copied into the run and the export; a
    sentence typed without capitals reaches either engine with the table's capitals."""
    loaded = load_model(trained / "weights/tiny/best.pt", trained / "weights/tiny", CPU)
    exported = load_exported(trained / "ct2-float32", 1)
    assert loaded.casing is not None and loaded.casing == exported.casing
    assert (trained / "ct2-float32" / "casing.json").is_file()
    typed, cased = ["one two three ."], ["One Two three ."]
    table = {"two": "Two"}  # the toy language has no capitals: a table of our own
    for model, translate in ((loaded, translate_sentences), (exported, translate_exported)):
        model.casing = table
        with_table = translate(model, typed, beam=1)
        model.casing = None
        assert with_table == translate(model, cased, beam=1) != translate(model, typed, beam=1)


def test_the_spelling_table_travels_with_the_run_and_both_engines_use_it(trained: Path) -> None:
    """spelling.json is learnt when the data is prepared (the word counts of the source side),
    copied into the run and the export; a typo reaches either engine as the word it stands for."""
    loaded = load_model(trained / "weights/tiny/best.pt", trained / "weights/tiny", CPU)
    exported = load_exported(trained / "ct2-float32", 1)
    assert loaded.spelling is not None and loaded.spelling == exported.spelling
    assert loaded.spelling["two"] > 10 and "tow" not in loaded.spelling
    assert (trained / "ct2-float32" / "spelling.json").is_file()
    typed, spelt = ["one tow three ."], ["one two three ."]
    for model, translate in ((loaded, translate_sentences), (exported, translate_exported)):
        respelt = translate(model, typed, beam=1)
        table, model.spelling = model.spelling, None
        assert respelt == translate(model, spelt, beam=1) != translate(model, typed, beam=1)
        model.spelling = table


def test_mbr_chooses_alike_with_both_engines(trained: Path) -> None:
    loaded = load_model(trained / "weights/tiny/best.pt", trained / "weights/tiny", CPU)
    exported = load_exported(trained / "ct2-float32", 1)
    for model in (loaded, exported):
        model.config = dataclasses.replace(
            model.config, decode=dataclasses.replace(model.config.decode, mbr=True)
        )
    by_torch = translate_sentences(loaded, SOURCES, beam=4)
    by_ct2 = translate_exported(exported, SOURCES, beam=4)
    # CTranslate2 ranks its beam with another length penalty (length ** alpha), so its n-best
    # lists, and now and then its consensus, differ (0.88 on this model).
    assert agreement(by_ct2, by_torch) >= 0.8


@pytest.fixture
def mbr_bounds(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The bound (`source_chars`) each MBR choice of either engine is given, in order."""
    from translator.inference import decode, mbr

    bounds: list[int | None] = []

    def spy(candidates, detokenize, source_chars=None):  # noqa: ANN001, ANN202
        bounds.append(source_chars)
        return mbr.mbr_choice(candidates, detokenize, source_chars)

    monkeypatch.setattr(decode, "mbr_choice", spy)
    monkeypatch.setattr(engine, "mbr_choice", spy)
    return bounds


def test_both_engines_bound_the_mbr_choice_by_the_sentence_as_typed(
    trained: Path, mbr_bounds: list[int | None]
) -> None:
    bounds = mbr_bounds
    loaded = load_model(trained / "weights/tiny/best.pt", trained / "weights/tiny", CPU)
    exported = load_exported(trained / "ct2-float32", 1)
    typed = ["WHERE IS THE STATION", "", *SOURCES[:3]]
    for model, translate in ((loaded, translate_sentences), (exported, translate_exported)):
        model.config = dataclasses.replace(
            model.config, decode=dataclasses.replace(model.config.decode, mbr=True)
        )
        bounds.clear()
        translate(model, typed, beam=4)
        assert sorted(bounds) == sorted(len(t) for t in typed if t)


def test_scoring_the_validation_split_bounds_the_mbr_choice_in_both_engines(
    trained: Path, mbr_bounds: list[int | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    from translator.export.validate import validate_model_command
    from translator.inference.evaluate import validate_command

    bounds = mbr_bounds
    monkeypatch.chdir(trained)
    mbr_on = ["decode.mbr=true"]
    result = validate_command(
        "tiny", None, 4, None, None, mbr_on, "cpu", Path("runs"), Path("weights")
    )
    by_run = sorted(bounds)
    bounds.clear()
    validate_model_command(trained / "ct2-float32", 4, None, None, mbr_on)
    assert len(by_run) == len(result.hypotheses) > 0
    assert None not in by_run and sorted(bounds) == by_run
    sources = [src for src, _, _ in result.samples]
    assert set(map(len, sources)) <= set(by_run)


def test_validate_model_scores_like_validate_run(trained: Path) -> None:
    by_run = cli(trained, "validate", "--run", "tiny", "--beam", "1")
    by_model = cli(trained, "validate", "--model", "ct2-float32", "--beam", "1")
    assert by_run.returncode == 0 and by_model.returncode == 0, by_model.stderr

    def figures(stdout: str) -> dict[str, str]:
        rows = [line.split(None, 1) for line in stdout.splitlines() if " signature:" not in line]
        return {r[0]: r[1] for r in rows if r and r[0] in ("sentences", "loss", "BLEU", "chrF")}

    got, expected = figures(by_model.stdout), figures(by_run.stdout)
    assert got.keys() == {"sentences", "loss", "BLEU", "chrF"}
    assert got["sentences"] == expected["sentences"]
    assert abs(float(got["loss"].split()[0]) - float(expected["loss"].split()[0])) < 1e-3
    assert abs(float(got["BLEU"]) - float(expected["BLEU"])) <= 0.2
    assert not any(p.name.startswith("encoded") for p in (trained / "ct2-float32").iterdir())


@pytest.mark.parametrize("suffix", ["txt", "srt"])
def test_a_file_translates_alike_with_both_engines_keeping_its_layout(
    trained: Path, suffix: str
) -> None:
    """`translate --input F --output G`: the same file through PyTorch and CTranslate2 (float32,
    greedy) gives the same file; its layout and every subtitle timing stay as they were."""
    text = (
        "one cat and two dogs . the red house is big .\n\n  - five cats .\n1. the dog .\n"
        if suffix == "txt"
        else "1\n00:00:01,000 --> 00:00:02,000\none cat and two dogs\n\n"
        "2\n00:00:02,100 --> 00:00:03,000\nare red . the house\nis big .\n"
    )
    (trained / f"in.{suffix}").write_text(text)
    outs = []
    for engine_args in (["--run", "tiny"], ["--model", str(trained / "ct2-float32")]):
        out = trained / f"out-{engine_args[0][2:]}.{suffix}"
        done = cli(
            trained, "translate", *engine_args, "--beam", "1", "-i", f"in.{suffix}", "-o", str(out)
        )
        assert done.returncode == 0, done.stderr
        lines = text.count("\n")
        assert f"translated {lines} lines of in.{suffix} into {out}" in done.stderr
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    got = outs[0].split("\n")
    if suffix == "txt":
        assert got[1] == "" and got[2].startswith("  - ") and got[3].startswith("1. ")
        run_dir = trained / "weights" / "tiny"
        loaded = load_model(run_dir / "best.pt", run_dir, CPU)
        one, two = translate_sentences(
            loaded, ["one cat and two dogs .", "the red house is big ."], beam=1
        )
        assert got[0] == f"{one} {two}"  # the two sentences of line 1, one by one
    else:
        assert got[:2] == ["1", "00:00:01,000 --> 00:00:02,000"] and got[2]
        assert got[4:6] == ["2", "00:00:02,100 --> 00:00:03,000"] and got[6]
