"""A run's directories and files, and finding a run's checkpoint to load.

runs/<name>/      TensorBoard events
weights/<name>/   config.yaml, split.json, tokenizer_{src,tgt}.json, latest.pt, best.pt,
                  casing.json, spelling.json (tables learnt from its data),
                  parent.json (a run made from another run), teacher.json (a distilled one)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from translator.errors import CheckpointError, ConfigError
from translator.run.checkpoint import AVERAGED, BEST, EMA, LATEST, saved_step
from translator.run.names import tokenizer_file

PARENT_RECORD = "parent.json"
"""The run this run was made from (train.init_from): run/lineage.py writes and reads it."""
TEACHER_RECORD = "teacher.json"
"""A distilled run's teacher (`translator distill`): what made its training data."""
WORD_TABLES = ("casing.json", "spelling.json")
"""Tables of words learnt from the run's data (translator/data/store.py's WORD_TABLES, which
tests/run checks are these)."""


def check_run_name(name: str) -> None:
    """A run name is one plain directory name: refuse empty names, paths and dot-names."""
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"--run {name!r}: a run name is a plain directory name, e.g. cpu")


@dataclass(frozen=True)
class RunPaths:
    name: str
    log_dir: Path
    weights_dir: Path

    @classmethod
    def create(
        cls, name: str, runs_root: Path = Path("runs"), weights_root: Path = Path("weights")
    ):
        check_run_name(name)
        return cls(name, runs_root / name, weights_root / name)

    @property
    def config(self) -> Path:
        return self.weights_dir / "config.yaml"

    @property
    def split(self) -> Path:
        return self.weights_dir / "split.json"

    @property
    def encoded(self) -> Path:
        return self.weights_dir / "encoded.npz"

    @property
    def store_record(self) -> Path:
        """Which prepared store the run trains on (translator/data/store.py)."""
        return self.weights_dir / "store.json"

    @property
    def parent_record(self) -> Path:
        return self.weights_dir / PARENT_RECORD

    @property
    def latest(self) -> Path:
        return self.weights_dir / LATEST

    @property
    def best(self) -> Path:
        return self.weights_dir / BEST

    def tokenizer(self, side: str) -> Path:
        return tokenizer_file(self.weights_dir, side)

    def discard_prepared(self) -> list[str]:
        """Remove what an earlier attempt of this run name that never checkpointed left: its
        split, tokenizers, encoded data, word tables and lineage records. The names removed."""
        if not self.weights_dir.is_dir():
            return []
        prepared = (self.split, self.encoded, self.store_record, self.parent_record)
        tables = (self.weights_dir / name for name in WORD_TABLES)
        removed = []
        for f in (*prepared, self.weights_dir / TEACHER_RECORD, *tables,
                  self.tokenizer("src"), self.tokenizer("tgt")):  # fmt: skip
            if f.is_file():
                f.unlink()
                removed.append(f.name)
        return removed

    def make(self) -> None:
        """Create both directories, with a one-line error when that is not possible."""
        for d in (self.log_dir, self.weights_dir):
            try:
                d.mkdir(parents=True, exist_ok=True)
                probe = d / ".write-test"
                probe.write_text("")
                probe.unlink()
            except OSError as exc:
                raise ConfigError(
                    f"cannot write to {d}: {exc.strerror}; choose another directory"
                ) from None


def find_checkpoint(
    run: str | None, checkpoint: Path | None, weights_root: Path = Path("weights")
) -> tuple[Path, Path]:
    """The checkpoint to load and the run directory holding its tokenizers.

    `--checkpoint` wins; otherwise `checkpoint_of_run` (the weight average, else best.pt, else
    latest.pt) of the run, or with neither option of the run whose checkpoints were written last.
    """
    if run is not None:
        check_run_name(run)
        run_dir = weights_root / run
        if not run_dir.is_dir():
            known = ", ".join(sorted(d.name for d in _run_dirs(weights_root))) or "none"
            raise CheckpointError(f"--run {run}: no directory {run_dir} (runs there: {known})")
    elif checkpoint is not None:
        run_dir = checkpoint.parent
    else:
        run_dir = most_recent_run(weights_root)
    return (checkpoint or checkpoint_of_run(run_dir)), run_dir


def locate_run(given: str, weights_root: Path, key: str, todo: str) -> tuple[Path, Path]:
    """The checkpoint and the run directory that `given` names: a checkpoint file, a run
    directory, or a run name under `weights_root` (its checkpoint as `checkpoint_of_run` chooses).
    Each failure is one line that starts with `key`; `todo` says what to do when nothing of that
    name exists."""
    path = Path(given).expanduser()
    if path.is_file():
        return path, path.parent
    run_dir = path if path.is_dir() else weights_root / given
    if not run_dir.is_dir():
        runs = ", ".join(sorted(d.name for d in _run_dirs(weights_root))) or "none"
        raise CheckpointError(
            f"{key}: no run, run directory or checkpoint of that name (runs in {weights_root}/: "
            f"{runs}); {todo}"
        )
    try:
        return checkpoint_of_run(run_dir), run_dir
    except CheckpointError as exc:
        raise CheckpointError(f"{key}: {exc}") from None


def checkpoint_of_run(run_dir: Path) -> Path:
    """The run's weight average (ema.pt) or averaged checkpoint when current (of the two, the
    one of the later step, then the newer file: training writes ema.pt last, `translator average`
    afterwards replaces averaged.pt), else its best, else its latest."""
    # Current: made at the step of latest.pt or later, not left over from before a resume. The
    # steps in the files decide, not their times: a run copied with `cp -r` keeps its average.
    averages = {p: saved_step(p) for p in (run_dir / EMA, run_dir / AVERAGED) if p.is_file()}
    if averages:
        latest = run_dir / LATEST
        floor = saved_step(latest) if latest.is_file() else 0
        current = [p for p, step in averages.items() if step >= floor]
        if current:
            return max(current, key=lambda p: (averages[p], p.stat().st_mtime_ns))
    for name in (BEST, LATEST):
        if (run_dir / name).is_file():
            return run_dir / name
    raise CheckpointError(
        f"{run_dir}: no {BEST} or {LATEST} yet; train the run first, or pass --checkpoint PATH"
    )


def most_recent_run(weights_root: Path) -> Path:
    """The run directory under `weights_root` whose best.pt or latest.pt was written last."""
    newest: tuple[float, Path] | None = None
    for run_dir in _run_dirs(weights_root):
        for name in (BEST, LATEST):
            path = run_dir / name
            if path.is_file() and (newest is None or path.stat().st_mtime > newest[0]):
                newest = (path.stat().st_mtime, run_dir)
    if newest is None:
        raise CheckpointError(
            f"no trained run in {weights_root}/; train one (translator train --config "
            "configs/cpu.yaml), or choose one with --run NAME or --checkpoint PATH"
        )
    return newest[1]


def _run_dirs(weights_root: Path) -> list[Path]:
    return [d for d in weights_root.iterdir() if d.is_dir()] if weights_root.is_dir() else []
