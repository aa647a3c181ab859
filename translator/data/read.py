"""Reading a parallel corpus: the entries of `data.source`, each streamed as (source, target) pairs.

An entry is a hub dataset name, a .jsonl / .parquet / .tsv file, or a Moses pair of aligned
plain-text files (a prefix with the two language codes, or `{en: FILE, it: FILE}`); any file may
be gzipped. Every reader is a generator: nothing holds a whole corpus in memory, and an error
names its file and line.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from translator.config import DataConfig
from translator.data.hub import BATCH_ROWS, iter_hub_pairs
from translator.data.integrity import file_digest
from translator.errors import DataError

Pair = tuple[str, str]
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet", ".tsv", ".txt", ".gz")

SourceKind = Literal["jsonl", "tsv", "parquet", "moses", "hub"]


@dataclass(frozen=True)
class Source:
    """One entry of `data.source`, resolved: its kind and the files (two for Moses) it reads."""

    kind: SourceKind
    name: str
    """The entry as the user wrote it: in the data summary and in errors."""
    paths: tuple[Path, ...] = ()

    def fingerprint(self) -> list[object]:
        """What identifies the content: each file's resolved path, size and mtime; the hub name."""
        if self.kind == "hub":
            return [self.kind, self.name]
        out: list[object] = [self.kind]
        for path in self.paths:
            stat = path.stat()
            out.append([str(path.resolve()), stat.st_size, stat.st_mtime_ns])
        return out

    def content(self) -> list[object]:
        """What its files hold, not where or when they were written: their SHA-256 (the hub: its
        name). For what costs far more to remake than a read of the files (a distilled corpus)."""
        if self.kind == "hub":
            return self.fingerprint()
        return [self.kind, *(file_digest(path) for path in self.paths)]


def resolve_sources(cfg: DataConfig) -> list[Source]:
    """Every entry of `data.source`, checked: files exist, Moses pairs have both sides."""
    return [_resolve(entry, cfg) for entry in cfg.sources()]


def _resolve(entry: str | dict[str, str], cfg: DataConfig) -> Source:
    if isinstance(entry, dict):
        paths = tuple(Path(entry[lang]).expanduser() for lang in (cfg.lang_src, cfg.lang_tgt))
        for path in paths:
            if not path.is_file():
                raise DataError(f"data.source: file not found: {path}")
        return Source("moses", f"{paths[0]} + {paths[1]}", paths)
    path = Path(entry).expanduser()
    if path.is_dir():
        raise DataError(
            f"data.source: {path} is a directory; point it at a .jsonl, .parquet or .tsv file, "
            "or at the common prefix of a Moses pair (corpus.en-it for corpus.en-it.en/.it)"
        )
    if path.is_file():
        suffix = Path(path.name.removesuffix(".gz")).suffix
        kind: SourceKind = {".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}.get(
            suffix, "tsv"
        )
        return Source(kind, entry, (path,))
    moses = tuple(_moses_side(path, lang) for lang in (cfg.lang_src, cfg.lang_tgt))
    if all(moses):
        return Source("moses", entry, moses)  # type: ignore[arg-type]
    if any(moses):
        missing = cfg.lang_tgt if moses[0] else cfg.lang_src
        raise DataError(
            f"data.source {entry}: found one side of a Moses pair but no {entry}.{missing}"
            "[.gz]; give both files"
        )
    if path.suffix in LOCAL_SUFFIXES or os.sep in entry:
        raise DataError(f"data.source: file not found: {entry}")
    return Source("hub", entry)


def _moses_side(prefix: Path, lang: str) -> Path | None:
    for candidate in (Path(f"{prefix}.{lang}"), Path(f"{prefix}.{lang}.gz")):
        if candidate.is_file():
            return candidate
    return None


def iter_source(source: Source, cfg: DataConfig) -> Iterator[Pair]:
    """The pairs of one source, in file order."""
    src, tgt = cfg.lang_src, cfg.lang_tgt
    if source.kind == "hub":
        yield from iter_hub_pairs(source.name, cfg)
    elif source.kind == "moses":
        yield from _moses_pairs(*source.paths)
    elif source.kind == "parquet":
        yield from _parquet_pairs(source.paths[0], src, tgt)
    else:
        path = source.paths[0]
        parse = _parse_json_line if source.kind == "jsonl" else _parse_tsv_line
        for n, line in _lines(path):
            if line.strip():
                yield parse(line, path, n, src, tgt)


def read_pairs(cfg: DataConfig) -> list[Pair]:
    """Every pair of every source, as one list: for small corpora and tests (prepare streams)."""
    return [pair for source in resolve_sources(cfg) for pair in iter_source(source, cfg)]


def read_local_pairs(path: Path, lang_src: str, lang_tgt: str) -> list[Pair]:
    """Pairs from one local file (.jsonl in the opus_books schema, .parquet, or tab-separated)."""
    cfg = DataConfig(source=str(path), lang_src=lang_src, lang_tgt=lang_tgt)
    pairs = read_pairs(cfg)
    if not pairs:
        raise DataError(f"{path}: the file holds no sentence pairs")
    return pairs


# --------------------------------------------------------------------------- files


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed when its name ends in .gz."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    return path.open("rb")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Every line with its 1-based number, decoded; a non-UTF-8 byte or a broken gzip stream
    names its line."""
    with open_binary(path) as f:
        n = 0
        try:
            for n, raw in enumerate(f, start=1):  # noqa: B007 (n is read after the loop)
                yield n, _decode(raw, path, n)
        except (OSError, EOFError) as exc:  # gzip: truncated or not gzip at all
            raise DataError(
                f"{path}:{n + 1}: unreadable ({exc}); download the file again"
            ) from None


def _decode(raw: bytes, path: Path, n: int) -> str:
    try:
        # "utf-8-sig" on line 1: a byte-order mark (Windows editors) is not part of the text
        return raw.decode("utf-8-sig" if n == 1 else "utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}:{n}: not valid UTF-8 (byte {raw[exc.start]:#04x} at column "
            f"{exc.start + 1}); re-encode the file as UTF-8"
        ) from None


def _moses_pairs(src_path: Path, tgt_path: Path) -> Iterator[Pair]:
    """Line n of one file with line n of the other; unequal lengths name both files and counts."""
    src_lines, tgt_lines = _lines(src_path), _lines(tgt_path)
    n = 0
    for n, src in src_lines:  # noqa: B007
        nxt = next(tgt_lines, None)
        if nxt is None:
            longer = n + sum(1 for _ in src_lines)
            _unequal(src_path, longer, tgt_path, n - 1)
        yield src, nxt[1]
    rest = sum(1 for _ in tgt_lines)
    if rest:
        _unequal(src_path, n, tgt_path, n + rest)


def _unequal(a: Path, a_lines: int, b: Path, b_lines: int) -> None:
    raise DataError(
        f"data.source: the Moses pair is not aligned: {a} has {a_lines:,} lines but {b} has "
        f"{b_lines:,}; both files need one sentence per line, line for line"
    )


def _parse_json_line(line: str, path: Path, n: int, src: str, tgt: str) -> Pair:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{n}: malformed JSON ({exc.msg}); fix or delete the line") from None
    if not isinstance(record, dict):
        raise DataError(f'{path}:{n}: expected a JSON object like {{"translation": {{...}}}}')
    pair = record.get("translation", record)
    if not isinstance(pair, dict):
        raise DataError(f'{path}:{n}: "translation" must be an object of language: text')
    for lang in (src, tgt):
        if not isinstance(pair.get(lang), str):
            found = ", ".join(map(str, pair)) or "none"
            raise DataError(
                f"{path}:{n}: no {lang!r} text in the pair (languages found: {found}); "
                "check data.lang_src / data.lang_tgt"
            )
    return pair[src], pair[tgt]


def _parse_tsv_line(line: str, path: Path, n: int, src: str = "", tgt: str = "") -> Pair:
    fields = line.split("\t")
    if len(fields) != 2:
        raise DataError(
            f"{path}:{n}: expected 2 tab-separated fields (source<TAB>target), found {len(fields)}"
        )
    return fields[0], fields[1]


def _parquet_pairs(path: Path, src: str, tgt: str) -> Iterator[Pair]:
    import pyarrow.parquet as pq

    try:
        batches = pq.ParquetFile(open_binary(path)).iter_batches(batch_size=BATCH_ROWS)
        n = 0
        for batch in batches:
            for row in batch.to_pylist():
                n += 1
                yield _row_pair(row, src, tgt, f"{path}: row {n}")
    except DataError:
        raise
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None


def _row_pair(row: dict, src: str, tgt: str, where: str) -> Pair:
    pair = row.get("translation", row)
    if not isinstance(pair, dict) or not all(isinstance(pair.get(k), str) for k in (src, tgt)):
        raise DataError(f"{where} has no {src!r}/{tgt!r} text; check data.lang_src/tgt")
    return pair[src], pair[tgt]
