"""Preparing and training at corpus scale: time, peak memory and store size per corpus size.

    python scripts/bench_prepare.py                       # 100k, 1M and 10M pairs
    python scripts/bench_prepare.py --sizes 100k,1M --steps 50

The corpus of N pairs is the shared subtitle corpus (opensubs.jsonl) repeated until N pairs, cut
there, written as a Moses pair of files (corpus.en-it.en / .it) in a temporary folder and
prepared with `data.dedup=false` (repeats are not duplicates then): the real corpus's own
sentence lengths, no pair joined to another. For each N, as a user runs it:

- `translator prepare --config C`: wall time, peak RSS of the whole process tree (polled from
  /proc every 0.1 s), store size on disk, and the store's own per-phase times;
- `translator train --config C` for --steps steps on that store: time from launch to step 1,
  steps/s over the steps after the first, peak RSS;
- the tokenizers library's encode alone on the same text (both sides, `encode_batch` on every
  core, the store's tokenizers), on up to --encode-sample pairs, scaled to N: the floor that
  preparation is compared with.

Prints one table, then the figures as one JSON line. Nothing is committed; the folder is removed
unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from itertools import cycle, islice
from pathlib import Path

from bench_common import DEFAULT_DATA

ROOT = Path(__file__).resolve().parents[1]


def parse_size(text: str) -> int:
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("km")) * scale)


def write_moses(data: Path, n: int, prefix: Path) -> None:
    """The first `n` pairs of the corpus repeated, as prefix.en and prefix.it."""
    pairs = []
    with data.open(encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)["translation"]
            pairs.append((" ".join(record["en"].split()), " ".join(record["it"].split())))
    with open(f"{prefix}.en", "w", encoding="utf-8") as en, open(f"{prefix}.it", "w") as it:
        for src, tgt in islice(cycle(pairs), n):
            en.write(src + "\n")
            it.write(tgt + "\n")


class TreeMemory:
    """Peak resident memory of a process and all its descendants, polled from /proc: all of it
    (VmRSS, which counts the pages of the memory-mapped store that were read, shared with other
    processes and given back under pressure), and the private part alone (RssAnon)."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.pid, self.peak, self.peak_anon, self.done = pid, 0, 0, threading.Event()
        self.thread = threading.Thread(target=self._poll, args=(every,), daemon=True)
        self.thread.start()

    def _poll(self, every: float) -> None:
        while not self.done.wait(every):
            rss, anon = tree_rss(self.pid)
            self.peak, self.peak_anon = max(self.peak, rss), max(self.peak_anon, anon)

    def stop(self) -> tuple[int, int]:
        self.done.set()
        self.thread.join()
        return self.peak, self.peak_anon


def tree_rss(root: int) -> tuple[int, int]:
    """Bytes resident in `root` and its descendants now: all, and the private (anonymous) part."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    total, anon, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for name, value in re.findall(r"(VmRSS|RssAnon):\s+(\d+) kB", status):
            if name == "VmRSS":
                total += int(value) * 1024
            else:
                anon += int(value) * 1024
    return total, anon


def run(
    args: list[str], cwd: Path, env: dict[str, str]
) -> tuple[float, tuple[int, int], list[tuple[float, str]]]:
    """Run a command: wall seconds, peak tree RSS (all, private), each stderr line with its time."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    memory = TreeMemory(proc.pid)
    lines = [(time.perf_counter() - start, line.rstrip()) for line in proc.stderr]
    proc.wait()
    peak = memory.stop()
    if proc.returncode:
        sys.exit(f"{' '.join(args)} failed:\n" + "\n".join(text for _, text in lines[-20:]))
    return time.perf_counter() - start, peak, lines


def encode_alone(store: Path, prefix: Path, n: int, sample: int) -> float:
    """Seconds the tokenizers library takes to encode `n` pairs (measured on `sample`)."""
    from tokenizers import Tokenizer

    from translator.run.names import tokenizer_file

    src_tok = Tokenizer.from_file(str(tokenizer_file(store, "src")))
    tgt_tok = Tokenizer.from_file(str(tokenizer_file(store, "tgt")))
    with open(f"{prefix}.en", encoding="utf-8") as en, open(f"{prefix}.it", encoding="utf-8") as it:
        src = [line.rstrip("\n") for line in islice(en, sample)]
        tgt = [line.rstrip("\n") for line in islice(it, sample)]
    start = time.perf_counter()
    for i in range(0, len(src), 20_000):
        src_tok.encode_batch(src[i : i + 20_000])
        tgt_tok.encode_batch(tgt[i : i + 20_000])
    return (time.perf_counter() - start) * n / len(src)


def bench_size(n: int, args: argparse.Namespace, work: Path) -> dict[str, float]:
    folder = work / f"n{n}"
    folder.mkdir()
    prefix = folder / "corpus.en-it"
    write_moses(args.data, n, prefix)
    env = {**os.environ, "HOME": str(work / "home"), "HF_HUB_OFFLINE": "1"}
    sets = ["--set", f"data.source={prefix}", "--set", "data.dedup=false",
            "--set", f"data.store_dir={work / 'stores'}"]  # fmt: skip
    for item in args.set:
        sets += ["--set", item]
    base = [sys.executable, "-m", "translator"]
    prep_s, prep_rss, lines = run(
        [*base, "prepare", "--config", str(args.config), *sets], folder, env
    )
    store = next(Path(text.split()[-1]) for _, text in lines if text.startswith("prepared data in"))
    meta = json.loads((store / "meta.json").read_text())
    size = sum(f.stat().st_size for f in store.iterdir())
    train_sets = ["--set", f"train.max_steps={args.steps}", "--set", "train.eval_every=0",
                  "--set", "train.log_every=1", "--set", "train.eval_bleu=false",
                  "--set", "train.n_samples=0", "--set", "train.checkpoint_every=100000",
                  "--set", "train.average_last=0"]  # fmt: skip
    train_s, train_rss, lines = run(
        [*base, "train", "--config", str(args.config), "--run", "bench", *sets, *train_sets],
        folder,
        env,
    )
    steps = [(t, int(m.group(1))) for t, text in lines if (m := re.match(r"step (\d+) ", text))]
    first = steps[0][0]
    rate = (steps[-1][1] - steps[0][1]) / (steps[-1][0] - first)
    floor = encode_alone(store, prefix, n, args.encode_sample)
    figures = {
        f"{n}_prepare_s": prep_s,
        f"{n}_prepare_peak_rss_gb": prep_rss[0] / 1e9,
        f"{n}_prepare_peak_private_gb": prep_rss[1] / 1e9,
        f"{n}_store_mb": size / 1e6,
        f"{n}_encode_alone_s": floor,
        f"{n}_prepare_over_encode": prep_s / floor,
        f"{n}_first_step_s": first,
        f"{n}_steps_per_s": rate,
        f"{n}_train_peak_rss_gb": train_rss[0] / 1e9,
        f"{n}_train_peak_private_gb": train_rss[1] / 1e9,
    }
    figures |= {f"{n}_phase_{k.replace(' ', '')}_s": v for k, v in meta["seconds"].items()}
    shutil.rmtree(folder)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100k,1M,10M")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "cpu.yaml")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--encode-sample", type=int, default=1_000_000)
    parser.add_argument("--set", action="append", default=[], help="More config overrides.")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    args.config = args.config.resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-prepare-", dir=args.workdir))
    figures: dict[str, float] = {}
    try:
        for size in args.sizes.split(","):
            n = parse_size(size)
            figures |= bench_size(n, args, work)
            print(json.dumps({k: round(v, 3) for k, v in figures.items() if k.startswith(f"{n}_")}),
                  flush=True)  # fmt: skip
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print_table(figures, [parse_size(s) for s in args.sizes.split(",")])


def print_table(figures: dict[str, float], sizes: list[int]) -> None:
    names = sorted({k.split("_", 1)[1] for k in figures}, key=lambda k: list(
        dict.fromkeys(k2.split("_", 1)[1] for k2 in figures)).index(k))  # fmt: skip
    print(f"{'figure':<34}" + "".join(f"{n:>14,}" for n in sizes))
    for name in names:
        cells = "".join(f"{figures.get(f'{n}_{name}', float('nan')):>14,.3f}" for n in sizes)
        print(f"{name:<34}{cells}")
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
