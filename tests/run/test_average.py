"""Checkpoint averaging: kept step checkpoints, averaged.pt, `translator average` (and its
`--with-parent`, which moves a run's weights part of the way back to its parent's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from helpers import ROOT, cli, make_pairs, write_jsonl
from typer.testing import CliRunner

from translator.cli import app
from translator.errors import CheckpointError, ConfigError
from translator.run.average import AVERAGED, average_states, step_checkpoints
from translator.run.checkpoint import load_checkpoint, save_checkpoint
from translator.run.paths import checkpoint_of_run
from translator.training.train import train_command
from translator.training.trainer import Trainer

TINY = str(ROOT / "configs" / "tiny.yaml")
TINY_CONFIG = ROOT / "configs" / "tiny.yaml"
QUIET = ["train.eval_every=0", "train.checkpoint_every=1000", "train.batch_tokens=256"]


def fake_state(value: float, step: int) -> dict:
    return {
        "model": {"w": torch.full((2, 3), value), "n": torch.tensor(step)},
        "optimizer": {"state": {}},
        "progress": {"step": step},
        "rng": {},
        "config": {},
        "tokenizers": {"src": "a", "tgt": "b"},
    }


def test_average_is_the_mean_of_the_weights(tmp_path: Path) -> None:
    paths = []
    for n, value in enumerate([1.0, 2.0, 6.0]):
        paths.append(tmp_path / f"step_{n}.pt")
        save_checkpoint(fake_state(value, n), paths[-1])
    out = average_states(paths)
    torch.testing.assert_close(out["model"]["w"], torch.full((2, 3), 3.0))
    assert int(out["model"]["n"]) == 2  # integer buffers come from the newest
    assert out["weights_only"] and out["progress"]["step"] == 2


def test_average_refuses_checkpoints_of_another_vocabulary(tmp_path: Path) -> None:
    a, b = fake_state(1.0, 1), fake_state(1.0, 2)
    b["tokenizers"] = {"src": "x", "tgt": "b"}
    save_checkpoint(a, tmp_path / "a.pt")
    save_checkpoint(b, tmp_path / "b.pt")
    with pytest.raises(CheckpointError, match="average checkpoints of one run only"):
        average_states([tmp_path / "a.pt", tmp_path / "b.pt"])


def test_training_keeps_k_checkpoints_and_translate_uses_their_average(corpus: Path) -> None:
    runner = CliRunner()
    args = ["train", "--config", TINY, "--set", f"data.source={corpus}", "--run", "avg"]
    args += ["--set", "train.max_steps=25", "--set", "train.checkpoint_every=5"]
    args += ["--set", "train.average_last=3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    run_dir = Path("weights/avg")
    kept = step_checkpoints(run_dir)
    assert [p.name for p in kept] == [f"step_{s:08d}.pt" for s in (15, 20, 25)]
    averaged = load_checkpoint(run_dir / AVERAGED)
    states = [load_checkpoint(p)["model"] for p in kept]
    for key, value in averaged["model"].items():
        if value.is_floating_point():
            mean = torch.stack([s[key] for s in states]).mean(dim=0)
            torch.testing.assert_close(value, mean, msg=key)
    assert checkpoint_of_run(run_dir) == run_dir / AVERAGED
    out = runner.invoke(app, ["translate", "--run", "avg", "one two ."])
    assert out.exit_code == 0 and "averaged.pt" in out.output
    # The steps in the files decide, not their times: a copy without them keeps the average.
    os.utime(run_dir / AVERAGED, ns=(1, 1))
    assert checkpoint_of_run(run_dir) == run_dir / AVERAGED
    # A latest.pt of a later step (the run trained on) makes the average stale: best.pt is used.
    ended = load_checkpoint(run_dir / "latest.pt")
    save_checkpoint({**ended, "progress": {**ended["progress"], "step": 30}}, run_dir / "latest.pt")
    os.utime(run_dir / "latest.pt", ns=(1, 1))
    assert checkpoint_of_run(run_dir) == run_dir / "best.pt"
    save_checkpoint(ended, run_dir / "latest.pt")  # back to where the kept checkpoints end
    # `translator average` writes it again, from the newest two.
    out = runner.invoke(app, ["average", "--run", "avg", "--last", "2"])
    assert out.exit_code == 0, out.output
    assert "step_00000020.pt, step_00000025.pt" in out.output
    assert checkpoint_of_run(run_dir) == run_dir / AVERAGED
    # More than are kept: one line that says how many there are.
    out = runner.invoke(app, ["average", "--run", "avg", "--last", "9"])
    assert out.exit_code == 1 and "only 3 step checkpoints are kept" in out.output
    # An averaged checkpoint cannot be resumed from: it has no optimizer state.
    out = runner.invoke(app, ["train", "--run", "avg", "--resume", str(run_dir / AVERAGED)])
    assert out.exit_code != 0 and "holds weights only" in out.output


def train(name: str, source: Path | str, *extra: str, resume: str | None = None) -> Trainer:
    overrides = [f"data.source={source}", "train.epochs=50", *QUIET, *extra]
    return train_command(TINY_CONFIG, overrides, name, resume, "cpu")


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    """Run `parent`, a few steps on one toy corpus; and a second corpus for its children."""
    write_jsonl(tmp_path / "other.jsonl", make_pairs(300, seed=7, max_words=4))
    train("parent", write_jsonl(tmp_path / "general.jsonl", make_pairs(600)), "train.max_steps=6")
    return tmp_path / "weights" / "parent"


def test_average_with_parent_moves_the_weights_that_share_of_the_way_back(parent: Path) -> None:
    from translator.commands.average import average_command
    from translator.run.average import average_states, step_checkpoints

    kept = ["train.checkpoint_every=3", "train.average_last=2", "train.max_steps=9"]
    train("child", "other.jsonl", "train.init_from=parent", *kept)
    run_dir = Path("weights/child")
    theirs = load_checkpoint(checkpoint_of_run(parent))["model"]
    mean = average_states(step_checkpoints(run_dir)[-2:])["model"]
    average_command("child", 2, None, Path("weights"), with_parent=0.0)
    plain = load_checkpoint(run_dir / "averaged.pt")
    assert "blended_with_parent" not in plain
    for name, tensor in mean.items():
        assert torch.equal(plain["model"][name], tensor), name
    done = cli(Path.cwd(), "average", "--run", "child", "--last", "2", "--with-parent", "0.25")
    assert done.returncode == 0, done.stderr
    assert "0.25 of the way to the weights of its parent parent (step 6)" in done.stderr
    blended = load_checkpoint(run_dir / "averaged.pt")
    assert blended["blended_with_parent"]["share"] == 0.25
    assert blended["progress"]["step"] == 9  # still the run's newest: translate takes it
    assert checkpoint_of_run(run_dir) == run_dir / "averaged.pt"
    for name, tensor in mean.items():
        if tensor.is_floating_point():
            expected = 0.75 * tensor.double() + 0.25 * theirs[name].double()
            torch.testing.assert_close(blended["model"][name].double(), expected, msg=name)


def test_average_with_parent_refuses_what_it_cannot_blend(parent: Path) -> None:
    from translator.commands.average import average_command

    kept = ["train.checkpoint_every=2", "train.average_last=2", "train.max_steps=4"]
    train("orphan", "other.jsonl", *kept)
    with pytest.raises(ConfigError, match="run orphan was not made from another run"):
        average_command("orphan", 2, None, Path("weights"), with_parent=0.25)
    train("child", "other.jsonl", "train.init_from=parent", *kept)
    before = Path("weights/child/averaged.pt").read_bytes()
    for share in (1.0, -0.1, float("nan")):
        with pytest.raises(ConfigError, match="the parent's share of the weights"):
            average_command("child", 2, None, Path("weights"), with_parent=share)
    taken = checkpoint_of_run(parent)
    state = load_checkpoint(taken)
    state["progress"]["step"] = 99  # the parent trained on since the child was made
    torch.save(state, taken)
    with pytest.raises(CheckpointError, match="is not the checkpoint run child started from"):
        average_command("child", 2, None, Path("weights"), with_parent=0.25)
    taken.unlink()
    with pytest.raises(CheckpointError, match=r"as weights/child/parent\.json names it"):
        average_command("child", 2, None, Path("weights"), with_parent=0.25)
    assert Path("weights/child/averaged.pt").read_bytes() == before  # nothing written
