"""A run made from another run (train.init_from): it starts as its parent, with the parent's
vocabulary, learns its own corpus, resumes exactly, records where it came from, and refuses
every bad input with one line before writing anything."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from helpers import ROOT, cli, make_pairs, scalars, write_jsonl

from translator.errors import CheckpointError, ConfigError, DataError
from translator.inference.evaluate import validation_loss
from translator.model.transformer import build_model
from translator.run.checkpoint import load_checkpoint
from translator.run.paths import checkpoint_of_run
from translator.training import train as train_module
from translator.training.train import train_command
from translator.training.trainer import Trainer

TINY = ROOT / "configs" / "tiny.yaml"
QUIET = ["train.eval_every=0", "train.checkpoint_every=1000", "train.batch_tokens=256"]


def train(name: str, source: Path | str, *extra: str, resume: str | None = None) -> Trainer:
    overrides = [f"data.source={source}", "train.epochs=50", *QUIET, *extra]
    return train_command(TINY, overrides, name, resume, "cpu")


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    """Run `parent`, a few steps on one toy corpus; and a second corpus for its children."""
    write_jsonl(tmp_path / "other.jsonl", make_pairs(300, seed=7, max_words=4))
    train("parent", write_jsonl(tmp_path / "general.jsonl", make_pairs(600)), "train.max_steps=6")
    return tmp_path / "weights" / "parent"


def test_child_starts_with_the_parents_weights_and_tokenizers(
    parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train_module.Trainer, "fit", lambda self: self.progress)
    child = train("child", "other.jsonl", "train.init_from=parent", "train.max_steps=5")
    taken = checkpoint_of_run(parent)  # the one `translate` would choose
    state = load_checkpoint(taken)
    weights = child.model.state_dict()
    assert weights.keys() == state["model"].keys()
    for name, tensor in state["model"].items():
        assert torch.equal(weights[name], tensor), name
    for side in ("src", "tgt"):
        mine = Path(f"weights/child/tokenizer_{side}.json").read_bytes()
        assert mine == (parent / f"tokenizer_{side}.json").read_bytes()
    record = json.loads(Path("weights/child/parent.json").read_text())
    assert record["run"] == "parent" and record["step"] == 6
    assert record["checkpoint"] == str(taken.resolve())
    assert child.progress.step == 0  # a fresh step count ...
    assert not child.optimizer.state  # ... and optimizer


def test_a_few_steps_lower_the_childs_loss_on_its_corpus(parent: Path) -> None:
    child = train("child", "other.jsonl", "train.init_from=parent", "train.max_steps=30")
    before = build_model(child.config.model, *(t.get_vocab_size() for t in (
        child.data.src_tokenizer, child.data.tgt_tokenizer)))  # fmt: skip
    before.load_state_dict(load_checkpoint(checkpoint_of_run(parent))["model"])
    valid = child.data.valid
    parent_loss = validation_loss(before, valid, 256, torch.device("cpu"))
    child_loss = validation_loss(child.model, valid, 256, torch.device("cpu"))
    assert child_loss < parent_loss - 0.1


def test_resumed_child_equals_an_uninterrupted_one(parent: Path) -> None:
    straight = train("straight", "other.jsonl", "train.init_from=parent", "train.max_steps=12")
    train("split", "other.jsonl", "train.init_from=parent", "train.max_steps=5")
    # the resume reads the child's own files: the parent may have gone
    for checkpoint in parent.glob("*.pt"):
        checkpoint.unlink()
    second = train("split", "other.jsonl", "train.max_steps=12", resume="latest")
    assert second.progress.step == 12
    assert straight.losses[5:] == second.losses
    for (name, p), q in zip(
        straight.model.named_parameters(), second.model.parameters(), strict=True
    ):
        assert torch.equal(p, q), name


def test_weighted_sources_train_on_an_adapted_run_and_name_each_source(
    parent: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mixed = "[{path: other.jsonl, weight: 2}, {path: general.jsonl, weight: 0.25}]"
    with caplog.at_level("INFO", logger="translator"):
        child = train("mixed", mixed, "train.init_from=parent", "train.max_steps=3")
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("data:"))
    assert "an epoch: other.jsonl" in line and " x 2 = " in line and " x 0.25 = " in line
    entries = child.data.train_entries
    assert entries is not None and set(entries.tolist()) == {0, 1}
    epoch = child.sampler.epoch_examples(0)
    counts = torch.bincount(torch.from_numpy(entries[epoch].astype("int64")), minlength=2)
    n = torch.bincount(torch.from_numpy(entries.astype("int64")), minlength=2)
    assert counts.tolist() == [2 * int(n[0]), round(0.25 * int(n[1]))]


def test_eval_sets_are_logged_under_their_names_and_can_pick_best(parent: Path) -> None:
    write_jsonl(Path("dev.jsonl"), make_pairs(30, seed=11))
    train(
        "evals", "other.jsonl", "train.init_from=parent", "train.max_steps=8",
        "train.eval_every=4", "train.eval_sets={dev: dev.jsonl, general: general.jsonl}",
        "train.best_metric=dev/loss",
    )  # fmt: skip
    for name in ("dev", "general", "valid"):
        assert [s for s, _ in scalars(Path("runs/evals"), f"{name}/loss")] == [4, 8], name
        assert [s for s, _ in scalars(Path("runs/evals"), f"{name}/bleu")] == [4, 8], name
    dev = scalars(Path("runs/evals"), "dev/loss")
    best_step = min(dev, key=lambda sv: sv[1])[0]
    assert torch.load("weights/evals/best.pt", weights_only=True)["progress"]["step"] == best_step


def test_model_key_that_differs_from_the_parent_is_named(parent: Path) -> None:
    with pytest.raises(ConfigError, match=r"model\.d_model is 64 but the parent parent has 32"):
        train("bad", "other.jsonl", "train.init_from=parent", "model.d_model=64")
    # a value equal to the parent's, and the dropout (no shape), are accepted
    child = train(
        "ok", "other.jsonl", "train.init_from=parent", "model.d_model=32", "model.dropout=0.3",
        "train.max_steps=1",
    )  # fmt: skip
    assert child.config.model.dropout == 0.3 and child.config.model.d_ff == 64


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("missing", r"no run, run directory or checkpoint of that name \(runs in weights/: parent"),
        ("not_a_checkpoint", "not a readable checkpoint"),
        ("no_tokenizers", "the parent has no tokenizers"),
    ],
)
def test_bad_parents_are_one_line_errors(parent: Path, setup: str, expected: str) -> None:
    init_from = "nowhere"
    if setup == "not_a_checkpoint":
        Path("junk.pt").write_bytes(b"this is not a checkpoint")
        init_from = "junk.pt"
    if setup == "no_tokenizers":
        (parent / "tokenizer_tgt.json").unlink()
        init_from = "parent"
    with pytest.raises(CheckpointError, match=expected):
        train("child", "other.jsonl", f"train.init_from={init_from}")
    assert not Path("weights/child").exists()  # nothing half-written


@pytest.mark.parametrize("weight", ["0", "-1", "abc", ".nan"])
def test_bad_weights_name_the_entry(weight: str) -> None:
    with pytest.raises(ConfigError, match=r"data\.source\[1\]\.weight must be a (positive|finite)"):
        train("w", f"[a.jsonl, {{path: b.jsonl, weight: {weight}}}]")


def test_eval_set_with_unequal_sides_is_named_before_anything_is_written(
    tmp_path: Path,
) -> None:
    write_jsonl(tmp_path / "c.jsonl", make_pairs(100))
    (tmp_path / "t.en").write_text("one\ntwo\n")
    (tmp_path / "t.it").write_text("uno\n")
    with pytest.raises(DataError, match=r"train\.eval_sets\.held: the Moses pair is not aligned"):
        train("e", "c.jsonl", "train.eval_sets={held: t}")
    assert not Path("weights/e").exists()


def test_cli_adapts_validates_a_test_file_and_matches_sacrebleu(tmp_path: Path) -> None:
    import sacrebleu

    write_jsonl(tmp_path / "general.jsonl", make_pairs(600))
    write_jsonl(tmp_path / "mine.jsonl", make_pairs(300, seed=3))
    test_pairs = make_pairs(40, seed=21)
    write_jsonl(tmp_path / "test.jsonl", test_pairs)
    common = ["--config", str(TINY), "--set", "train.eval_every=0", "--set", "train.max_steps=4"]
    done = cli(tmp_path, "train", *common, "--set", "data.source=general.jsonl", "--run", "p")
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "train", *common, "--set", "data.source=mine.jsonl", "--run", "c",
               "--init-from", "p")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "starting from run p (weights/p/" in done.stderr
    events = b"".join(p.read_bytes() for p in (tmp_path / "runs" / "c").glob("events.*"))
    assert b"made from another run" in events and b"run/parent" in events  # TensorBoard too
    done = cli(tmp_path, "validate", "--run", "c", "--data", "test.jsonl", "--output", "h.txt")
    assert done.returncode == 0, done.stderr
    hyps = (tmp_path / "h.txt").read_text(encoding="utf-8").splitlines()
    refs = [t for _, t in test_pairs]
    assert len(hyps) == len(refs)
    by_hand = sacrebleu.corpus_bleu(hyps, [refs]).score
    chrf = sacrebleu.corpus_chrf(hyps, [refs]).score
    assert f"BLEU        {by_hand:.2f}" in done.stdout
    assert f"chrF        {chrf:.2f}" in done.stdout
    assert "BLEU signature: nrefs:1" in done.stdout and "data        test.jsonl" in done.stdout
    assert math.isfinite(float(done.stdout.split("loss")[1].split()[0]))


def test_the_child_keeps_the_parents_typed_forms_unless_it_sets_its_own(tmp_path: Path) -> None:
    from translator.training.adapt import adapted_config

    corpus = write_jsonl(tmp_path / "general.jsonl", make_pairs(300))
    train("noisy", corpus, "train.max_steps=2", "data.noise={typos: 0.2}", "data.typo_words=0.5")
    given = ["train.init_from=noisy", f"data.source={corpus}"]
    inherited, _ = adapted_config(TINY, given, Path("weights"))
    assert inherited.data.noise == {"typos": 0.2} and inherited.data.typo_words == 0.5
    own, _ = adapted_config(TINY, [*given, "data.noise={}"], Path("weights"))
    assert own.data.noise == {}
