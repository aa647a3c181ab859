"""`translator validate` and `translator translate` end to end, on a tiny run trained once."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import sacrebleu
import torch
from helpers import ROOT, make_pairs, write_jsonl
from typer.testing import CliRunner

from translator.cli import app
from translator.config import load_config
from translator.data.prepare import prepare_data
from translator.errors import CheckpointError, ConfigError
from translator.inference.evaluate import validate_command
from translator.inference.predict import (
    encode_sources,
    load_model,
    override_config,
    save_attention,
    translate_sentences,
)
from translator.run.paths import RunPaths, find_checkpoint
from translator.specials import EOS_ID, SOS_ID, UNK_ID

CPU = torch.device("cpu")


@dataclass
class Trained:
    root: Path
    weights: Path
    runs: Path

    @property
    def run_dir(self) -> Path:
        return self.weights / "tiny"

    def cli(self, *args: str, stdin: str | None = None, python: tuple[str, ...] = ()):
        """Run `python -m translator ARGS` in `root`; return the completed process."""
        env = {**os.environ, "HOME": str(self.root / "home"), "HF_DATASETS_OFFLINE": "1"}
        env["HF_HUB_OFFLINE"] = "1"
        return subprocess.run(
            [sys.executable, *python, "-m", "translator", *args],
            cwd=self.root,
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    def dirs(self) -> list[str]:
        return ["--weights-dir", str(self.weights)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """A run `tiny` trained for 20 steps with the real CLI on the toy corpus."""
    root = tmp_path_factory.mktemp("predict")
    run = Trained(root, root / "weights", root / "runs")
    corpus = write_jsonl(root / "corpus.jsonl", make_pairs(600))
    done = run.cli(
        "train",
        "--config",
        str(ROOT / "configs" / "tiny.yaml"),
        "--set",
        f"data.source={corpus}",
        "--run",
        "tiny",
        "--weights-dir",
        str(run.weights),
        "--runs-dir",
        str(run.runs),
    )
    assert done.returncode == 0, done.stderr
    return run


def loaded(trained: Trained):
    return load_model(trained.run_dir / "best.pt", trained.run_dir, CPU)


def imported_modules(importtime_stderr: str) -> set[str]:
    """Module names from the stderr of `python -X importtime`."""
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:")
    }


# --------------------------------------------------------------------------- translate


def test_translate_arguments(trained: Trained):
    done = trained.cli("translate", "one two three .", "", "the red cat .", *trained.dirs())
    assert done.returncode == 0, done.stderr
    model = loaded(trained)
    expected = translate_sentences(model, ["one two three .", "", "the red cat ."])
    assert done.stdout == "".join(line + "\n" for line in expected)
    assert f"using {trained.run_dir / 'best.pt'}" in done.stderr


def test_translate_stdin_line_by_line_in_order(trained: Trained):
    lines = [
        "one two three .",
        "",
        "   ",
        "the zebra and the unicorn are red .",  # unknown words
        " ".join(["one", "two", "cat"] * 30) + " .",  # longer than the model's 62 words
        "the dog is big .",
        "five .",
    ]
    done = trained.cli(
        "translate", "--beam", "2", *trained.dirs(),
        stdin="\n".join(lines) + "\n", python=("-X", "importtime"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout.split("\n")
    assert out[-1] == "" and len(out) - 1 == len(lines)
    assert out[1] == out[2] == ""
    assert "line 5: a sentence of 91 words" in done.stderr  # translated in pieces, not cut
    # The batched, length-sorted beam search equals translating each line alone.
    model = loaded(trained)
    assert out[:-1] == [translate_sentences(model, [line], beam=2)[0] for line in lines]
    # It needs neither the corpus nor its libraries, nor TensorBoard or the metrics.
    modules = imported_modules(done.stderr)
    for heavy in ("datasets", "torch.utils.tensorboard", "tensorboard", "sacrebleu", "matplotlib"):
        assert heavy not in modules


def test_blank_input_gives_blank_output(trained: Trained):
    model = loaded(trained)
    assert translate_sentences(model, ["", "  \t "]) == ["", ""]
    assert translate_sentences(model, []) == []


def test_unknown_words_become_unk(trained: Trained):
    model = loaded(trained)
    [ids] = encode_sources(model.src_tokenizer, ["one zebra ."], model.max_source_tokens)
    assert ids[0] == SOS_ID and ids[-1] == EOS_ID
    assert ids[2] == UNK_ID and UNK_ID not in (ids[1], ids[3])


def test_default_run_is_the_one_trained_last(trained: Trained, tmp_path: Path):
    weights = tmp_path / "weights"
    shutil.copytree(trained.run_dir, weights / "old")
    shutil.copytree(trained.run_dir, weights / "new")
    (weights / "new" / "best.pt").unlink()  # only latest.pt: it is the one chosen
    (weights / "empty").mkdir()
    now = time.time()
    os.utime(weights / "old" / "best.pt", (now - 100, now - 100))
    os.utime(weights / "old" / "latest.pt", (now - 100, now - 100))
    assert find_checkpoint(None, None, weights) == (weights / "new" / "latest.pt", weights / "new")
    os.utime(weights / "old" / "best.pt", (now + 100, now + 100))
    assert find_checkpoint(None, None, weights) == (weights / "old" / "best.pt", weights / "old")
    ckpt = weights / "old" / "latest.pt"
    assert find_checkpoint(None, ckpt, weights) == (ckpt, weights / "old")


def test_loading_errors_are_one_line(trained: Trained, tmp_path: Path):
    with pytest.raises(CheckpointError, match="no trained run"):
        find_checkpoint(None, None, tmp_path / "nothing")
    with pytest.raises(CheckpointError, match="runs there: tiny"):
        find_checkpoint("nope", None, trained.weights)
    # A run whose tokenizers are not the checkpoint's.
    other = tmp_path / "other"
    shutil.copytree(trained.run_dir, other)
    shutil.copy(other / "tokenizer_tgt.json", other / "tokenizer_src.json")
    with pytest.raises(CheckpointError, match="src vocabulary differs"):
        load_model(other / "best.pt", other, CPU)
    (other / "tokenizer_src.json").unlink()
    with pytest.raises(CheckpointError, match="no tokenizer_src.json"):
        load_model(other / "best.pt", other, CPU)
    (other / "broken.pt").write_bytes((other / "best.pt").read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_model(other / "broken.pt", trained.run_dir, CPU)
    done = CliRunner().invoke(app, ["translate", "--run", "nope", "hello", *trained.dirs()])
    assert done.exit_code == 1
    assert done.stderr.startswith("error: --run nope: ") and done.stderr.count("\n") == 1


def test_only_decoding_and_data_settings_can_change(trained: Trained):
    config = loaded(trained).config
    changed = override_config(config, None, ["decode.beam=3", "data.max_len=20"], "validate")
    assert (changed.decode.beam, changed.data.max_len, changed.model) == (3, 20, config.model)
    with pytest.raises(ConfigError, match="takes only data.* and decode.*"):
        override_config(config, None, ["model.d_model=64"], "validate")
    with pytest.raises(ConfigError, match="takes only decode.*"):
        override_config(config, None, ["data.max_len=20"], "translate", ("decode",))


def test_attention_figure(trained: Trained):
    pil = pytest.importorskip("PIL.Image")
    png = trained.root / "att.png"
    done = CliRunner().invoke(
        app,
        ["translate", "the red cat is big .", "--attention", str(png), "--attention-self",
         *trained.dirs()],
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert f"attention maps saved to {png}" in done.stderr
    with pil.open(png) as image:
        image.load()
        assert image.format == "PNG"
        assert image.width > 300 and image.height > 300
        low, high = image.convert("L").getextrema()
        assert high - low > 100  # not a blank page
    with pytest.raises(ConfigError, match="--attention-layer 3: .* has layers 1 to 1"):
        save_attention(loaded(trained), "one .", trained.root / "x.png", layer=3)


# --------------------------------------------------------------------------- validate


def test_validate(trained: Trained):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    done = trained.cli(
        "validate", "--run", "tiny", "--output", "hyps.txt", "--runs-dir", str(trained.runs),
        *trained.dirs(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = dict(
        line.split(None, 1) for line in done.stdout.splitlines()[:8] if line.strip()
    )  # name -> value
    assert set(table) == {
        "run", "data", "checkpoint", "decoding", "sentences", "loss", "BLEU", "chrF"
    }  # fmt: skip
    assert table["data"] == "the run's validation split"
    assert "BLEU signature: nrefs:1|" in done.stdout and "chrF signature: nrefs:1|" in done.stdout
    best = torch.load(trained.run_dir / "best.pt", weights_only=True)
    step = best["progress"]["step"]
    assert f"(step {step:,})" in table["checkpoint"]

    # The loss is the trainer's own validation loss of that checkpoint.
    loss = float(table["loss"].split()[0])
    assert loss == pytest.approx(best["progress"]["best_valid_loss"], abs=1e-4)

    # The hypotheses are `translate`'s translations of the validation sources, in order.
    config = load_config(trained.run_dir / "config.yaml")
    data = prepare_data(config, RunPaths("tiny", trained.runs / "tiny", trained.run_dir))
    hypotheses = (trained.root / "hyps.txt").read_text(encoding="utf-8").split("\n")
    assert hypotheses[-1] == "" and len(hypotheses) - 1 == len(data.valid_pairs) == int(
        table["sentences"]
    )
    sources = [src for src, _ in data.valid_pairs]
    assert hypotheses[:-1] == translate_sentences(loaded(trained), sources, beam=1)
    # The scores are sacreBLEU's on these hypotheses and the validation references.
    references = [[ref for _, ref in data.valid_pairs]]
    bleu = sacrebleu.corpus_bleu(hypotheses[:-1], references).score
    chrf = sacrebleu.corpus_chrf(hypotheses[:-1], references).score
    assert float(table["BLEU"]) == pytest.approx(bleu, abs=0.005)
    assert float(table["chrF"]) == pytest.approx(chrf, abs=0.005)

    # The figures are in the run's TensorBoard at the checkpoint's step.
    events = EventAccumulator(str(trained.runs / "tiny"))
    events.Reload()
    for tag, value in (("valid/bleu", "BLEU"), ("valid/chrf", "chrF")):
        # training logged the same greedy figure at that step too; validate adds its own
        at_step = [s.value for s in events.Scalars(tag) if s.step == step]
        assert at_step and all(v == pytest.approx(float(table[value]), abs=0.01) for v in at_step)
    assert any(s.step == step and math.isfinite(s.value) for s in events.Scalars("valid/loss"))


def test_validate_with_beam(trained: Trained, capsys: pytest.CaptureFixture[str]):
    result = validate_command(
        "tiny", None, 3, None, None, ["decode.alpha=0.2"], "cpu", trained.runs, trained.weights
    )
    assert "beam 3, length penalty alpha 0.2" in capsys.readouterr().out
    assert result.beam == 3 and result.loaded.config.decode.alpha == 0.2
    assert len(result.samples) == 3  # the loop below checks something
    for src, _, hyp in result.samples:
        assert hyp == translate_sentences(result.loaded, [src], beam=3)[0]
    events = list((trained.runs / "tiny").glob("events.out.tfevents.*"))
    assert any(b"valid/bleu_beam3" in e.read_bytes() for e in events)
