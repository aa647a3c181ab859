"""The distilled corpus: one source of the training data, its source side translated by the
teacher. A derived file like the prepared store: keyed (teacher weights, source content,
languages, decoding), written whole or not at all, proved whole when opened, shared by every
student of that teacher on that data.

While it is made, the translations go to `translations.partial`, a chunk at a time, each chunk
flushed to disk: an interrupted translation goes on after the last whole line. When every source
has its translation, `pairs.tsv` (source TAB translation) is written, then `meta.json` with its
size and SHA-256; only then is the corpus there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from itertools import islice
from pathlib import Path
from typing import Any

from translator.config import DataConfig, DecodeConfig
from translator.data.integrity import file_digest, file_problem
from translator.data.read import Pair, Source, iter_source
from translator.durable import publish_text, published
from translator.errors import DataError, RunInUseError
from translator.jsonfile import read_json_object
from translator.run.lock import run_lock

log = logging.getLogger("translator")

FORMAT = 1
PAIRS, PARTIAL, META = "pairs.tsv", "translations.partial", "meta.json"


def corpus_key(
    teacher_digest: str, engine: str, source: Source, data: DataConfig, decode: DecodeConfig
) -> str:
    """What a distilled corpus is made of: the teacher's weights and engine, what the source's
    files hold, the languages and the decoding. A change to any of them makes another corpus."""
    ident = {
        "format": FORMAT,
        "teacher": teacher_digest,
        "engine": engine,
        "source": source.content(),  # a copy or a fresh download of the same file: the same corpus
        "langs": [data.lang_src, data.lang_tgt],
        **({"hub_config": data.hub_config} if source.kind == "hub" else {}),
        "decode": {k: v for k, v in asdict(decode).items() if k != "batch_size"},
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]


def one_line(text: str) -> str:
    """A sentence as one TSV field: tabs and line breaks become spaces."""
    return " ".join(text.replace("\t", " ").splitlines()) if text else text


def source_sentences(source: Source, data: DataConfig) -> Iterator[str]:
    return (one_line(src) for src, _ in iter_source(source, data))


def open_distilled(path: Path) -> Path | None:
    """The whole corpus's pairs.tsv at `path`, or None when it is not finished. A corpus whose
    file is not the one written is an error naming it (delete the directory to make it again)."""
    meta_path = path / META
    if not meta_path.is_file():
        return None
    meta = _read_meta(meta_path)
    if not isinstance(meta.get("size"), int) or not isinstance(meta.get("sha256"), str):
        problem: str | None = f"{META} does not say what was written"
    else:
        problem = file_problem(path, PAIRS, meta["size"], meta["sha256"])
    if problem:
        raise DataError(
            f"the distilled corpus {path} is damaged ({problem}); delete that directory and run "
            "the distillation again to translate it anew"
        )
    return path / PAIRS


def _read_meta(meta_path: Path) -> dict[str, Any]:
    meta = read_json_object(meta_path)
    if meta is None:
        raise DataError(
            f"the distilled corpus {meta_path.parent} is damaged ({META} is not what was "
            "written); delete that directory and run the distillation again to translate it anew"
        )
    return meta


def distil_source(
    source: Source,
    data: DataConfig,
    key: str,
    root: Path,
    translate: Callable[[], Callable[[list[str]], list[str]]],
    chunk: int,
    progress: bool = True,
) -> tuple[Path, dict[str, Any]]:
    """pairs.tsv of `source` translated by the teacher, made or reused; and what was done.

    `translate` is called only when some translating is left to do, and gives the function that
    translates a list of sentences. A corpus another process is making is waited for, then
    reused (two students of one teacher on one data started together)."""
    path = root / key
    path.mkdir(parents=True, exist_ok=True)
    try:
        with run_lock(path, f"distilled corpus {key}"):
            return _distil_locked(source, data, path, translate, chunk, progress)
    except RunInUseError:
        log.info("the distilled corpus %s is being made by another process: waiting for it", path)
    with run_lock(path, f"distilled corpus {key}", wait=True):
        return _distil_locked(source, data, path, translate, chunk, progress)


def _distil_locked(
    source: Source,
    data: DataConfig,
    path: Path,
    translate: Callable[[], Callable[[list[str]], list[str]]],
    chunk: int,
    progress: bool,
) -> tuple[Path, dict[str, Any]]:
    done = open_distilled(path)
    if done is not None:
        pairs = _read_meta(path / META).get("pairs", 0)
        return done, {"pairs": pairs, "translated": 0, "seconds": 0.0, "reused": True}
    total = sum(1 for _ in iter_source(source, data))
    if total == 0:
        raise DataError(f"{source.name}: no sentence pairs to translate; give a corpus with pairs")
    partial = path / PARTIAL
    start = whole_lines(partial)
    if start > total:
        raise DataError(
            f"{partial}: {start:,} translations kept but {source.name} has {total:,} pairs (it "
            f"changed since); delete {path} and run the distillation again"
        )
    translated, seconds = 0, 0.0
    if start < total:
        engine = translate()
        began = time.perf_counter()
        translated = _translate_rest(source, data, partial, start, total, engine, chunk, progress)
        seconds = time.perf_counter() - began
    meta = _finish(source, data, path, total)
    return path / PAIRS, {"pairs": meta["pairs"], "translated": translated, "seconds": seconds,
                          "resumed_at": start, "reused": False}  # fmt: skip


def whole_lines(partial: Path) -> int:
    """Translations kept in `partial`: its whole lines, counted a piece at a time (flat memory,
    whatever its size); a line cut short by an interruption is removed, to be translated again."""
    if not partial.is_file():
        return 0
    lines = end = read = 0
    with partial.open("r+b") as f:
        while piece := f.read(1 << 23):
            lines += piece.count(b"\n")
            last = piece.rfind(b"\n")
            if last >= 0:
                end = read + last + 1
            read += len(piece)
        if end < read:
            f.truncate(end)
    return lines


def _translate_rest(
    source: Source,
    data: DataConfig,
    partial: Path,
    start: int,
    total: int,
    engine: Callable[[list[str]], list[str]],
    chunk: int,
    progress: bool,
) -> int:
    from tqdm import tqdm

    sentences = islice(source_sentences(source, data), start, None)
    done = 0
    quiet = logging.getLogger("translator")
    with (
        partial.open("a", encoding="utf-8") as out,
        tqdm(total=total, initial=start, unit="sent", desc="teacher translating", file=sys.stderr,
             disable=None if progress else True, dynamic_ncols=True, smoothing=0.1) as bar,
    ):  # fmt: skip
        while batch := list(islice(sentences, chunk)):
            level = quiet.level  # a sentence cut to the teacher's positions is not news here
            quiet.setLevel(logging.ERROR)
            try:
                outputs = engine(batch)
            finally:
                quiet.setLevel(level)
            out.write("".join(one_line(o) + "\n" for o in outputs))
            out.flush()
            os.fsync(out.fileno())
            done += len(batch)
            bar.update(len(batch))
    return done


def _finish(source: Source, data: DataConfig, path: Path, total: int) -> dict[str, Any]:
    """pairs.tsv from the sources and the translations, then meta.json: the corpus is whole."""
    partial, pairs = path / PARTIAL, path / PAIRS
    count = extra = 0
    with partial.open(encoding="utf-8") as outputs, published(pairs) as f:
        for src, out in zip(source_sentences(source, data), outputs, strict=False):
            f.write(f"{src}\t{out.rstrip(chr(10))}\n")
            count += 1
        extra = sum(1 for _ in outputs)
        if count != total or extra:
            raise DataError(
                f"{source.name}: {total:,} pairs were counted but {count + extra:,} translated; "
                f"the source changed while it was translated: delete {path} and run the "
                "distillation again"
            )
    meta = {"format": FORMAT, "source": source.name, "pairs": count,
            "size": pairs.stat().st_size, "sha256": file_digest(pairs)}  # fmt: skip
    publish_text(path / META, json.dumps(meta, indent=1) + "\n")  # both names are on disk
    partial.unlink()  # before the translations they came from are removed
    return meta


def iter_pairs_tsv(path: Path) -> Iterator[Pair]:
    """The (source, translation) pairs of a pairs.tsv."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            src, _, out = line.rstrip("\n").partition("\t")
            yield src, out
