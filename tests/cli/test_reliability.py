"""Bad input at the command line: one clear `error:` line that names the file, line or key, exit
code 2 (config or usage) or 1 (anything else), and never a traceback.

Every case runs in-process through the CLI's `main()` (fast); a few per kind also run as a real
`python -m translator` process in the default run, and all of them do under `-m slow`.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from helpers import ROOT, make_pairs, write_jsonl

from translator.cli import main
from translator.run.checkpoint import FORMAT, VERSION
from translator.training.train import train_command

TINY = str(ROOT / "configs" / "tiny.yaml")
BASE_CKPT = "ck-weights/base/latest.pt"


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    code: int
    says: tuple[str, ...]
    """Phrases the error line must contain."""
    smoke: bool = False
    """Also run as a real process in the default test run."""


def train(run: str, *extra: str) -> tuple[str, ...]:
    """`translator train` on the good corpus; later options (`--set`) override earlier ones."""
    return ("train", "--config", TINY, "--run", run, "--set", "data.source=good.jsonl", *extra)


def corpus(run: str, source: str, *extra: str) -> tuple[str, ...]:
    return train(run, "--set", f"data.source={source}", *extra)


def resume(run: str, path: str, *extra: str) -> tuple[str, ...]:
    return train(run, "--resume", path, *extra)


CASES: dict[str, Case] = {
    # ---- configs and options: exit 2
    "config missing": Case(
        ("train", "--config", "missing.yaml", "--run", "c1"), 2,
        ("config file not found: missing.yaml",),
    ),
    "config invalid YAML": Case(
        ("train", "--config", "bad/invalid.yaml", "--run", "c2"), 2,
        ("invalid YAML in bad/invalid.yaml:4",), smoke=True,
    ),
    "config tab indentation": Case(
        ("train", "--config", "bad/tab.yaml", "--run", "c3"), 2,
        ("invalid YAML in bad/tab.yaml:2",),
    ),
    "config duplicate key": Case(
        ("train", "--config", "bad/duplicate.yaml", "--run", "c4"), 2,
        ("bad/duplicate.yaml:4", "'lr' appears twice"),
    ),
    "config not UTF-8": Case(
        ("train", "--config", "bad/latin1.yaml", "--run", "c5"), 2,
        ("bad/latin1.yaml is not UTF-8",),
    ),
    "config not a mapping": Case(
        ("train", "--config", "bad/list.yaml", "--run", "c6"), 2,
        ("bad/list.yaml must be a mapping of sections",),
    ),
    "config unknown key": Case(
        ("train", "--config", "bad/unknown.yaml", "--run", "c7"), 2,
        ("bad/unknown.yaml: unknown config key model.d_modle; did you mean model.d_model?",),
    ),
    "config unknown section": Case(
        ("train", "--config", "bad/section.yaml", "--run", "c8"), 2,
        ("bad/section.yaml: unknown config key modle; did you mean model?",),
    ),
    "config wrong type": Case(
        ("train", "--config", "bad/type.yaml", "--run", "c9"), 2,
        ("bad/type.yaml: train.max_steps must be an integer, got 'many'",),
    ),
    "config wrong choice": Case(
        train("c10", "--set", "model.norm=middle"), 2,
        ("model.norm must be one of pre, post, got 'middle'",),
    ),
    "config heads do not divide width": Case(
        train("c11", "--set", "model.n_heads=3"), 2,
        ("model.d_model (32) must be divisible by model.n_heads (3)",),
    ),
    "config negative learning rate": Case(
        train("c12", "--set", "train.lr=-1"), 2, ("train.lr must be positive",),
    ),
    "config dropout above one": Case(
        train("c13", "--set", "model.dropout=1.5"), 2, ("model.dropout must be in [0, 1)",),
    ),
    "config positions shorter than sentences": Case(
        train("c14", "--set", "model.max_positions=8"), 2,
        ("model.max_positions (8) must be at least data.max_len + 2",),
    ),
    "--set unknown key": Case(
        train("c15", "--set", "model.d_modle=128"), 2,
        ("--set 'model.d_modle=128': unknown config key model.d_modle; "
         "did you mean model.d_model?",),
        smoke=True,
    ),
    "--set unknown section": Case(
        train("c16", "--set", "trian.lr=0.1"), 2,
        ("unknown config key trian; did you mean train?",),
    ),
    "--set without a value": Case(
        train("c17", "--set", "train.lr"), 2, ("--set 'train.lr': expected section.key=value",),
    ),
    "--set wrong type": Case(
        train("c18", "--set", "train.max_steps=abc"), 2,
        ("train.max_steps must be an integer, got 'abc'",),
    ),
    "unknown device": Case(train("c19", "--device", "tpu"), 2, ("--device tpu",)),
    "bad run name": Case(train("../c20"), 2, ("--run '../c20'",)),
    "unwritable weights dir": Case(
        train("c21", "--weights-dir", "good.jsonl/sub"), 2,
        ("cannot write to good.jsonl/sub/c21", "choose another directory"),
    ),
    "unwritable runs dir": Case(
        train("c22", "--runs-dir", "good.jsonl/sub"), 2, ("cannot write to good.jsonl/sub/c22",),
    ),
    # ---- corpora: exit 1
    "corpus malformed JSON line": Case(
        corpus("d1", "bad/malformed.jsonl"), 1,
        ("bad/malformed.jsonl:3: malformed JSON",), smoke=True,
    ),
    "corpus missing language key": Case(
        corpus("d2", "bad/nolang.jsonl"), 1,
        ("bad/nolang.jsonl:2: no 'it' text", "languages found: en, fr"),
    ),
    "corpus wrong language pair": Case(
        corpus("d3", "good.jsonl", "--set", "data.lang_tgt=fr"), 1,
        ("good.jsonl:1: no 'fr' text", "languages found: en, it"),
    ),
    "corpus line not an object": Case(
        corpus("d4", "bad/array.jsonl"), 1, ("bad/array.jsonl:2: expected a JSON object",),
    ),
    "corpus translation not an object": Case(
        corpus("d5", "bad/string.jsonl"), 1,
        ('bad/string.jsonl:1: "translation" must be an object',),
    ),
    "corpus not UTF-8": Case(
        corpus("d6", "bad/latin1.jsonl"), 1,
        ("bad/latin1.jsonl:4: not valid UTF-8 (byte 0xe8",),
    ),
    "corpus empty file": Case(
        corpus("d7", "bad/empty.jsonl"), 1, ("bad/empty.jsonl: the file holds no sentence pairs",),
    ),
    "corpus blank lines only": Case(
        corpus("d8", "bad/blank.tsv"), 1, ("bad/blank.tsv: the file holds no sentence pairs",),
    ),
    "corpus nothing left after filtering": Case(
        corpus("d9", "bad/filtered.jsonl"), 1,
        ("no training pairs left after filtering", "3 pairs read; dropped 3 with an empty side"),
    ),
    "corpus every pair too long": Case(
        corpus("d10", "good.jsonl", "--set", "data.max_len=1"), 1,
        ("no training pairs left after filtering", "too long", "data.max_len"),
    ),
    "tsv three fields": Case(
        corpus("d11", "bad/three.tsv"), 1,
        ("bad/three.tsv:3: expected 2 tab-separated fields (source<TAB>target), found 3",),
    ),
    "tsv one field": Case(
        corpus("d12", "bad/one.tsv"), 1, ("bad/one.tsv:2: expected 2 tab-separated", "found 1"),
    ),
    "corpus missing file": Case(
        corpus("d13", "bad/nope.jsonl"), 1, ("data.source: file not found: bad/nope.jsonl",),
    ),
    "corpus is a directory": Case(corpus("d14", "bad"), 1, ("bad is a directory",)),
    "parquet corrupt": Case(
        corpus("d15", "bad/random.parquet"), 1, ("bad/random.parquet: not a readable parquet",),
    ),
    "parquet without language columns": Case(
        corpus("d16", "bad/columns.parquet"), 1, ("bad/columns.parquet: row 1 has no 'en'",),
    ),
    # ---- checkpoints given to --resume: exit 1
    "checkpoint truncated": Case(
        resume("k1", "ck/truncated.pt"), 1,
        ("ck/truncated.pt: not a readable checkpoint (truncated or corrupt",),
    ),
    "checkpoint random bytes": Case(
        resume("k2", "ck/random.pt"), 1, ("ck/random.pt: not a readable checkpoint",),
    ),
    "checkpoint empty file": Case(
        resume("k3", "ck/empty.pt"), 1, ("ck/empty.pt: not a readable checkpoint",),
    ),
    "checkpoint is a text file": Case(
        resume("k4", "good.jsonl"), 1, ("good.jsonl: not a readable checkpoint",),
    ),
    "checkpoint is a plain list": Case(
        resume("k5", "ck/list.pt"), 1, ("ck/list.pt: not a translator checkpoint",),
    ),
    "checkpoint without contents": Case(
        resume("k6", "ck/incomplete.pt"), 1, ("ck/incomplete.pt: incomplete checkpoint",),
    ),
    "checkpoint missing": Case(
        resume("k7", "ck/nope.pt"), 1, ("checkpoint not found: ck/nope.pt",),
    ),
    "checkpoint that runs code": Case(
        resume("k8", "ck/evil.pt"), 1,
        ("ck/evil.pt: refused to load", "system", "nothing in it was run"), smoke=True,
    ),
    "checkpoint of another vocabulary": Case(
        resume("k9", BASE_CKPT, "--set", "data.source=other.jsonl"), 1,
        (f"{BASE_CKPT}: its src vocabulary differs", "belongs to another run"),
    ),
    "checkpoint of another model shape": Case(
        resume("k10", BASE_CKPT, "--set", "model.d_ff=128"), 1,
        (f"{BASE_CKPT}: model shape does not match the config",),
    ),
    "resume before any checkpoint": Case(
        train("k11", "--resume"), 1, ("--resume: run 'k11' has no checkpoint",),
    ),
}  # fmt: skip


# --------------------------------------------------------------------------- the bad inputs


def _write_inputs(root: Path) -> None:
    """The files the cases name, under `root`, and a real 2-step run to resume from."""
    bad = root / "bad"
    bad.mkdir()
    good_pairs = make_pairs(300)
    write_jsonl(root / "good.jsonl", good_pairs)
    write_jsonl(root / "other.jsonl", [(s.upper(), t.upper()) for s, t in good_pairs])

    texts = {
        "invalid.yaml": "model:\n  d_model: 32\n  n_heads: [2\ntrain:\n  lr: 0.1\n",
        "tab.yaml": "model:\n\td_model: 32\n",
        "duplicate.yaml": "train:\n  lr: 0.1\n  seed: 1\n  lr: 0.2\n",
        "list.yaml": "- model\n- train\n",
        "unknown.yaml": "model:\n  d_modle: 32\n",
        "section.yaml": "modle:\n  d_model: 32\n",
        "type.yaml": "train:\n  max_steps: many\n",
        "malformed.jsonl": _jsonl(("one .", "uno ."), ("two .", "due .")) + '{"translation": {\n',
        "nolang.jsonl": _jsonl(("one .", "uno .")) + '{"translation": {"en": "a", "fr": "b"}}\n',
        "array.jsonl": _jsonl(("one .", "uno .")) + '["one .", "uno ."]\n',
        "string.jsonl": '{"translation": "one . -> uno ."}\n',
        "empty.jsonl": "",
        "blank.tsv": "\n   \n\t\n",
        "filtered.jsonl": _jsonl(("", "uno ."), ("one .", "  "), ("\t", "")),
        "three.tsv": "one .\tuno .\ntwo .\tdue .\nthree .\ttre .\textra\n",
        "one.tsv": "one .\tuno .\ntwo . due .\n",
    }
    for name, text in texts.items():
        (bad / name).write_text(text, encoding="utf-8")
    (bad / "latin1.yaml").write_bytes("train:\n  seed: 1 # caffè\n".encode("latin-1"))
    (bad / "latin1.jsonl").write_bytes(
        _jsonl(("one .", "uno ."), ("two .", "due ."), ("three .", "tre .")).encode()
        + '{"translation": {"en": "coffee", "it": "caffè"}}\n'.encode("latin-1")
    )
    (bad / "random.parquet").write_bytes(os.urandom(512))
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"english": ["one ."], "italian": ["uno ."]}), bad / "columns.parquet")

    train_command(
        Path(TINY),
        [f"data.source={root / 'good.jsonl'}", "train.max_steps=2", "train.eval_every=0"],
        "base",
        None,
        "cpu",
        runs_root=root / "ck-runs",
        weights_root=root / "ck-weights",
    )
    good = (root / BASE_CKPT).read_bytes()
    ck = root / "ck"
    ck.mkdir()
    (ck / "truncated.pt").write_bytes(good[: len(good) // 2])
    (ck / "random.pt").write_bytes(random.Random(0).randbytes(4096))  # the same bytes every run
    (ck / "empty.pt").write_bytes(b"")
    torch.save([1, 2, 3], ck / "list.pt")
    torch.save({"format": FORMAT, "version": VERSION}, ck / "incomplete.pt")
    torch.save(
        {"format": FORMAT, "version": VERSION, "model": {"w": _Payload(root / "PWNED")}},
        ck / "evil.pt",
    )


def _jsonl(*pairs: tuple[str, str]) -> str:
    import json

    return "".join(json.dumps({"translation": {"en": s, "it": t}}) + "\n" for s, t in pairs)


class _Payload:
    """Unpickling this would run `touch PWNED`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f'touch "{self.marker}"',))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reliability")
    _write_inputs(root)
    return root


def _out(mode: str) -> tuple[str, ...]:
    """Per-mode output directories, given before the case's own options (which win)."""
    return ("--weights-dir", f"out-{mode}/weights", "--runs-dir", f"out-{mode}/runs")


def _with_out(args: tuple[str, ...], mode: str) -> list[str]:
    return [args[0], *_out(mode), *args[1:]]


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(root / "home"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }


def run_process(root: Path, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "translator", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=_env(root),
        timeout=300,
        **kwargs,
    )


def check(name: str, code: int, stderr: str, root: Path) -> None:
    case = CASES[name]
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert code == case.code, stderr
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    for phrase in case.says:
        assert phrase in errors[0], errors[0]
    if case.code == 2:  # config and usage errors come before any work: nothing else is printed
        assert lines == errors, stderr
    assert not (root / "PWNED").exists()


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_in_process(
    name: str, inputs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(inputs)
    monkeypatch.setattr(sys, "argv", ["translator", *_with_out(CASES[name].args, "inproc")])
    with pytest.raises(SystemExit) as exit_:
        main()
    check(name, exit_.value.code, capsys.readouterr().err, inputs)


@pytest.fixture(scope="module")
def smoke_results(inputs: Path) -> dict[str, subprocess.CompletedProcess]:
    """The smoke cases as real processes, a few at a time."""
    names = [name for name, case in CASES.items() if case.smoke]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        done = pool.map(lambda n: run_process(inputs, _with_out(CASES[n].args, "proc")), names)
        return dict(zip(names, done, strict=True))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if case.smoke else pytest.mark.slow)
        for name, case in CASES.items()
    ],
)
def test_bad_input_real_process(name: str, inputs: Path, request: pytest.FixtureRequest) -> None:
    if CASES[name].smoke:
        done = request.getfixturevalue("smoke_results")[name]
    else:
        done = run_process(inputs, _with_out(CASES[name].args, "proc"))
    check(name, done.returncode, done.stderr, inputs)


def test_filtered_pairs_are_counted_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Empty, duplicate and over-long pairs are dropped and counted in the log; training goes on."""
    pairs = make_pairs(200, seed=3)
    duplicates = len(pairs) - len(set(pairs))  # the toy language repeats short sentences
    pairs += [("", "vuoto ."), ("empty .", " \t"), pairs[0], pairs[1], pairs[1]]
    pairs += [(" ".join(["one"] * 40), "uno ."), ("two .", " ".join(["due"] * 40))]
    source = write_jsonl(tmp_path / "mixed.jsonl", pairs)
    caplog.set_level("INFO", logger="translator")
    trainer = train_command(
        Path(TINY), [f"data.source={source}", "train.max_steps=2"], "mixed", None, "cpu"
    )
    assert trainer.progress.step == 2
    summary = (
        f"{len(pairs)} pairs read; dropped 2 with an empty side, {duplicates + 3} duplicates, "
        "2 too long"
    )
    assert summary in caplog.text


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_disk_full_during_checkpoint_is_one_line_and_keeps_the_previous(inputs: Path) -> None:
    """A file-size limit makes the next checkpoint write fail as a full disk would."""
    weights = inputs / "out-full" / "weights"
    shutil.copytree(inputs / "ck-weights" / "base", weights / "full")
    before = {p.name: p.read_bytes() for p in (weights / "full").glob("*.pt")}
    limit = min(len(data) for data in before.values()) // 2

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = run_process(
        inputs,
        ["train", "--run", "full", "--resume", "--weights-dir", str(weights),
         "--runs-dir", "out-full/runs", "--set", "train.max_steps=4"],
        preexec_fn=limit_file_size,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[-1].startswith("error: could not write checkpoint "), done.stderr
    assert "File too large; the previous checkpoint is intact" in lines[-1]
    assert sum(line.startswith("error:") for line in lines) == 1
    after = {p.name: p.read_bytes() for p in (weights / "full").glob("*.pt")}
    assert after == before  # the previous checkpoints, byte for byte
    assert not list((weights / "full").glob(".*.tmp"))
