"""`translate --input FILE [--output FILE] [--format text|srt|vtt]`: a whole file translated with
its layout, by either engine, in chunks, so memory stays flat however long the file.

Plain text: one line out per line in, with blank lines, indentation, list markers and line
endings kept (inference/segment.py lays each line out). Subtitles: inference/cues.py. The file
must be UTF-8 (a bad byte is named by its offset); the output is written whole, then renamed
into place, so a failure leaves no partial file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from translator.durable import published
from translator.errors import ConfigError
from translator.inference.cues import Cue, parse_cues, translate_cues

FORMATS = ("text", "srt", "vtt")
Translate = Callable[[list[str], list[int]], list[str]]
"""Texts and the file line of each -> their translations, in order."""


def document_format(path: Path | None, given: str | None) -> str:
    """`--format`, else the input's extension (.srt, .vtt), else plain text."""
    if given is not None:
        if given not in FORMATS:
            raise ConfigError(f"--format {given}: choose one of {', '.join(FORMATS)}")
        return given
    suffix = path.suffix.lower().lstrip(".") if path is not None else ""
    return suffix if suffix in ("srt", "vtt") else "text"


def read_lines(stream: BinaryIO, name: str) -> Iterator[str]:
    """The stream's lines as text (with their endings); bytes that are not UTF-8 are a one-line
    ConfigError naming the byte offset and the line."""
    offset = 0
    for n, raw in enumerate(stream, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{name}, line {n}: not UTF-8 (byte {offset + exc.start:,}: "
                f"0x{raw[exc.start]:02x}); convert it first, e.g. "
                f"`iconv -f windows-1252 -t utf-8 {name} > {name}.utf8`"
            ) from None
        offset += len(raw)


def translate_document(
    stream: BinaryIO,
    sink: TextIO,
    fmt: str,
    translate: Translate,
    name: str,
    chunk: int = 2048,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Translate `stream` in `fmt` into `sink`, `chunk` lines or cues at a time; returns the
    number of lines read. `progress(lines)` is called after each chunk."""
    lines = read_lines(stream, name)
    if fmt == "text":
        return _translate_text(lines, sink, translate, chunk, progress)
    return _translate_subtitles(lines, sink, fmt, translate, name, chunk, progress)


def _translate_text(
    lines: Iterator[str],
    sink: TextIO,
    translate: Translate,
    chunk: int,
    progress: Callable[[int], None] | None,
) -> int:
    done = 0
    batch: list[str] = []
    for line in lines:
        if done == 0 and not batch and line.startswith("\ufeff"):  # a byte-order mark: kept
            sink.write("\ufeff")
            line = line[1:]
        batch.append(line)
        if len(batch) >= chunk:
            done = _write_text(batch, done, sink, translate, progress)
            batch = []
    return _write_text(batch, done, sink, translate, progress) if batch else done


def _write_text(
    batch: list[str],
    done: int,
    sink: TextIO,
    translate: Translate,
    progress: Callable[[int], None] | None,
) -> int:
    bodies = [line.rstrip("\r\n") for line in batch]
    out = translate(bodies, list(range(done + 1, done + 1 + len(batch))))
    sink.write("".join(t + line[len(b) :] for t, b, line in zip(out, bodies, batch, strict=True)))
    if progress:
        progress(done + len(batch))
    return done + len(batch)


def _translate_subtitles(
    lines: Iterator[str],
    sink: TextIO,
    fmt: str,
    translate: Translate,
    name: str,
    chunk: int,
    progress: Callable[[int], None] | None,
) -> int:
    done = 0
    batch: list[Cue] = []
    for cue in parse_cues(lines, fmt, name):
        batch.append(cue)
        ends_sentence = cue.text and cue.text[-1].rstrip().endswith((".", "!", "?", "♪"))
        if len(batch) >= chunk and (ends_sentence or len(batch) >= 2 * chunk):
            done = _write_cues(batch, sink, translate, progress)
            batch = []
    if batch:
        done = _write_cues(batch, sink, translate, progress)
    return done


def _write_cues(
    batch: list[Cue], sink: TextIO, translate: Translate, progress: Callable[[int], None] | None
) -> int:
    translate_cues(batch, translate)
    sink.write("".join("".join(cue.head) + "".join(cue.out) for cue in batch))
    last = batch[-1]
    if progress:
        progress(last.line + len(last.text) - 1)
    return last.line + len(last.text) - 1


@contextmanager
def output_file(path: Path | None) -> Iterator[TextIO]:
    """stdout, or `path` published whole when the block ends without an error (durable.py): a
    reader never sees half a file, and a failure leaves none."""
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        with published(path) as sink:
            yield sink
    except OSError as exc:  # a folder that is not there or not ours, a full disk
        raise ConfigError(f"--output {path}: cannot write ({exc.strerror or exc})") from None


@contextmanager
def input_file(path: Path | None) -> Iterator[tuple[BinaryIO, str]]:
    """The input's bytes and its name for messages: the file, or stdin."""
    if path is None:
        yield sys.stdin.buffer, "stdin"
        return
    try:
        stream = path.open("rb")
    except OSError as exc:
        raise ConfigError(f"--input {path}: cannot read ({exc.strerror or exc})") from None
    with stream:
        yield stream, str(path)


@dataclass(frozen=True)
class Document:
    """Where `translate` reads and writes (--input, --output, --format); none: stdin, stdout."""

    input: Path | None = None
    output: Path | None = None
    format: str | None = None


def translate_inputs(
    texts: list[str], document: Document, translate: Translate, chunk: int
) -> None:
    """`translator translate`, either engine: the text arguments, else the --input file, else
    stdin, translated to --output or stdout. Arguments and stdin are lines of plain text unless
    --format says otherwise; a file's format comes from its extension."""
    if texts and document.input is not None:
        raise ConfigError("give the text as arguments or --input FILE, not both")
    fmt = document_format(document.input, document.format)
    with output_file(document.output) as sink:
        if texts:
            sink.write("".join(t + "\n" for t in translate(texts, list(range(1, len(texts) + 1)))))
            return
        with input_file(document.input) as (stream, name):
            if document.input is None and fmt == "text":
                _translate_stdin(sink, translate, chunk)
                return
            with _progress_bar(name) as progress:
                lines = translate_document(stream, sink, fmt, translate, name, chunk, progress)
    if document.output is not None:
        print(f"translated {lines:,} lines of {name} into {document.output}", file=sys.stderr)


def _translate_stdin(sink: TextIO, translate: Translate, chunk: int) -> None:
    """One line out per line in, a chunk at a time (one at a terminal); a bad byte becomes
    U+FFFD rather than stopping a long pipe."""
    stream = sys.stdin
    if hasattr(stream, "reconfigure"):  # lines end at \n only (as `wc -l` counts them)
        stream.reconfigure(errors="replace", newline="\n")
    size = 1 if stream.isatty() else chunk
    batch: list[str] = []
    first = 1
    for line in stream:
        batch.append(line.rstrip("\r\n"))
        if len(batch) >= size:
            _write_lines(sink, translate(batch, list(range(first, first + len(batch)))))
            first += len(batch)
            batch = []
    if batch:
        _write_lines(sink, translate(batch, list(range(first, first + len(batch)))))


def _write_lines(sink: TextIO, lines: list[str]) -> None:
    sink.write("".join(line + "\n" for line in lines))
    sink.flush()


@contextmanager
def _progress_bar(name: str) -> Iterator[Callable[[int], None]]:
    """Lines done, on stderr at a terminal (tqdm)."""
    from tqdm import tqdm

    with tqdm(desc=name, unit=" lines", disable=None, file=sys.stderr, dynamic_ncols=True) as bar:

        def update(lines: int) -> None:
            bar.update(lines - bar.n)

        yield update
