"""DDP on CPU (gloo, 2 processes): sharding, one step equals the single-process step, torchrun."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import ROOT, make_pairs, write_jsonl

from translator.config import Config
from translator.data.batching import TokenBatchSampler, collate, shard_batches
from translator.data.prepare import prepare_data
from translator.model.transformer import build_model
from translator.run.paths import RunPaths
from translator.training.distributed import Rank
from translator.training.trainer import Trainer

TINY = ROOT / "configs" / "tiny.yaml"


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_shards_are_equal_sized_and_cover_every_pair_once(world_size: int) -> None:
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(3, 40, 997), rng.integers(3, 40, 997)
    sampler = TokenBatchSampler(src, tgt, batch_tokens=300, seed=1)
    for epoch in range(3):
        shards = [shard_batches(sampler.batches(epoch), r, world_size) for r in range(world_size)]
        assert len({len(s) for s in shards}) == 1
        seen = sorted(i for shard in shards for batch in shard for i in batch)
        assert seen == list(range(997))


def _make_trainer(config: Config, run_dir: Path) -> Trainer:
    paths = RunPaths.create("d", run_dir / "runs", run_dir / "weights")
    paths.make()
    data = prepare_data(config, paths)
    torch.manual_seed(0)
    model = build_model(
        config.model, data.src_tokenizer.get_vocab_size(), data.tgt_tokenizer.get_vocab_size()
    )
    trainer = Trainer(config, model, data, paths, torch.device("cpu"))
    # SGD: Adam turns float noise in zero gradients (key biases) into full-size steps
    trainer.optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    return trainer


def _take(trainer: Trainer, world_size: int, steps: int | None, used: list[int]) -> None:
    """Each of `world_size` ranks takes its next `steps` batches (None: to the end of the epoch),
    as the fit loop would; their examples go to `used`."""
    p = trainer.progress
    end = None if steps is None else p.batch_in_epoch + steps
    for rank in range(world_size):
        trainer.rank = Rank(rank, world_size)
        for batch in trainer.epoch_batches(p.epoch)[p.batch_in_epoch : end]:
            used.extend(batch)
    p.batch_in_epoch = len(trainer.epoch_batches(p.epoch)) if end is None else end


def _resume(trainer: Trainer, world_size: int) -> None:
    """Save a checkpoint and restore it into the same trainer with `world_size` ranks."""
    state = trainer.state_dict()
    trainer.rank = Rank(0, world_size)
    trainer.load_state_dict(state, Path("x.pt"))


@pytest.mark.parametrize(("first", "second"), [(3, 2), (1, 1), (4, 3), (0, 2)])
def test_resume_1_2_1_processes_uses_each_pair_once_per_epoch(
    tiny_config: Config, tmp_path: Path, first: int, second: int
) -> None:
    config = dataclasses.replace(
        tiny_config, train=dataclasses.replace(tiny_config.train, batch_tokens=96)
    )
    trainer = _make_trainer(config, tmp_path)
    n = len(trainer.data.train)
    used: list[int] = []
    _take(trainer, 1, first, used)  # 1 process
    _resume(trainer, 2)
    _take(trainer, 2, second, used)  # 2 processes
    _resume(trainer, 1)
    _take(trainer, 1, None, used)  # 1 process to the end of the epoch
    assert trainer.progress.epoch == 0
    assert sorted(used) == list(range(n)), f"{len(used)} uses of {n} pairs"
    # the next epoch starts whole again
    trainer.progress.epoch, trainer.progress.batch_in_epoch = 1, 0
    trainer.progress.epoch_offset = 0
    assert sorted(i for b in trainer.epoch_batches(1) for i in b) == list(range(n))


def _ddp_worker(rank: int, config: Config, tmp: Path, items_per_rank: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", LOCAL_RANK=str(rank))
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp / 'rendezvous'}", rank=rank, world_size=2
    )
    try:
        trainer = _make_trainer(config, tmp / f"rank{rank}")
        items = [trainer.data.train[i] for i in range(2 * items_per_rank)]
        mine = items[rank * items_per_rank : (rank + 1) * items_per_rank]
        trainer.train_step([collate(mine[:3]), collate(mine[3:])])  # with no_sync accumulation
        if rank == 0:
            torch.save(trainer.model.state_dict(), tmp / "ddp.pt")
    finally:
        dist.destroy_process_group()


def test_ddp_step_equals_single_process_step_on_the_union(
    tiny_config: Config, tmp_path: Path
) -> None:
    config = dataclasses.replace(
        tiny_config,
        model=dataclasses.replace(tiny_config.model, dropout=0.0),
        # lr 1 from the first step: a normalisation error must show above float tolerance
        train=dataclasses.replace(tiny_config.train, lr=1.0, warmup_steps=0),
        data=dataclasses.replace(tiny_config.data, source=str(Path(tiny_config.data.source))),
    )
    # unequal token counts per rank, so the global normalisation matters
    mp.spawn(_ddp_worker, args=(config, tmp_path, 7), nprocs=2, join=True)
    single = _make_trainer(config, tmp_path / "single")
    items = [single.data.train[i] for i in range(14)]
    single.train_step([collate(items)])
    ddp_state = torch.load(tmp_path / "ddp.pt", weights_only=True)
    for name, value in single.model.state_dict().items():
        torch.testing.assert_close(ddp_state[name], value, atol=1e-6, rtol=1e-5, msg=name)


def _run(*args: str, torchrun: bool = False) -> subprocess.CompletedProcess:
    launcher = (
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
        if torchrun
        else [sys.executable]
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [*launcher, "-m", "translator", *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_torchrun_trains_writes_once_and_resumes_in_one_process(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", make_pairs(400))
    args = ["train", "--config", str(TINY), "--name", "ddp", "--set", f"data.source={corpus}"]
    first = _run(*args, "--set", "train.max_steps=6", torchrun=True)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "x 2 processes" in first.stderr
    assert len(list(Path("runs/ddp").glob("events.out.tfevents.*"))) == 1
    assert sorted(p.name for p in Path("weights/ddp").glob("*.pt")) == ["best.pt", "latest.pt"]
    state = torch.load("weights/ddp/latest.pt", weights_only=True)
    assert state["progress"]["step"] == 6 and state["progress"]["world_size"] == 2

    again = _run("train", "--name", "ddp", "--resume", "--set", "train.max_steps=9")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resumed from weights/ddp/latest.pt at step 6" in again.stderr
    assert "resuming with 1 processes instead of 2: epoch" in again.stderr
    back = _run("train", "--name", "ddp", "--resume", "--set", "train.max_steps=11", torchrun=True)
    assert back.returncode == 0, back.stderr[-3000:]
    assert torch.load("weights/ddp/latest.pt", weights_only=True)["progress"]["step"] == 11
