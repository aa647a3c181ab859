"""Files translated with their layout (inference/documents.py) and subtitle files
(inference/cues.py), around a stand-in engine that writes each word backwards: what reaches the
engine, and where its words land, can be read off the output."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from translator.errors import ConfigError
from translator.inference.documents import (
    Document,
    document_format,
    translate_document,
    translate_inputs,
)


class Backwards:
    """Each word written backwards; every call's texts and line numbers kept."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[int]]] = []

    def __call__(self, texts: list[str], lines: list[int]) -> list[str]:
        from translator.inference.segment import layout

        self.calls.append((texts, lines))
        out = []
        for text in texts:  # as the engines do: sentence by sentence, in the text's layout
            lay = layout(text)
            out.append(lay.assemble([" ".join(w[::-1] for w in p.split()) for p in lay.pieces]))
        return out

    @property
    def texts(self) -> list[str]:
        return [t for texts, _ in self.calls for t in texts]


def backwards(text: str) -> str:
    return " ".join(w[::-1] for w in text.split())


def run(data: bytes, fmt: str, chunk: int = 2048) -> tuple[str, Backwards]:
    engine = Backwards()
    sink = io.StringIO(newline="")
    translate_document(io.BytesIO(data), sink, fmt, engine, "in", chunk)
    return sink.getvalue(), engine


# --------------------------------------------------------------------------- plain text


def test_a_text_file_keeps_blank_lines_indentation_list_markers_and_line_endings() -> None:
    text = (
        "\ufeffDear Tom. How are you?\n"
        "\n"
        "\n"
        "  Shopping list:\r\n"
        "  - Two apples. Some bread.\n"
        "  * Milk\n"
        "    3. Call Dr. Smith.\n"
        "\tb) The end.  No newline at the end"
    )
    out, engine = run(text.encode(), "text")
    assert out == (
        "\ufeffraeD .moT woH era ?uoy\n"
        "\n"
        "\n"
        "  gnippohS :tsil\r\n"
        "  - owT .selppa emoS .daerb\n"
        "  * kliM\n"
        "    3. llaC .rD .htimS\n"
        "\tb) ehT .dne  oN enilwen ta eht dne"
    )
    assert [lines for _, lines in engine.calls] == [list(range(1, 9))]  # lines are numbered


TRANSLATED = {"": "", "One. Two!": ".enO !owT", "  - item one": "  - meti eno", "\tx": "\tx"}


@given(st.lists(st.sampled_from(list(TRANSLATED)), max_size=40))
def test_one_line_out_per_line_in_in_chunks(lines: list[str]) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    out, engine = run(data, "text", chunk=7)
    assert out == "".join(TRANSLATED[line] + "\n" for line in lines)
    assert all(len(texts) <= 7 for texts, _ in engine.calls)  # read and written a chunk at a time


def test_a_long_file_is_read_and_written_a_chunk_at_a_time() -> None:
    """Memory that does not grow with the file: the first chunk is written before the last
    line is read."""
    read = []

    def lines():
        for n in range(10_000):
            read.append(n)
            yield f"Line {n}.\n".encode()

    class Sink(io.StringIO):
        def write(self, s: str) -> int:
            self.lines_read_at_first_write = getattr(self, "lines_read_at_first_write", len(read))
            return super().write(s)

    sink = Sink()
    engine = Backwards()
    translate_document(lines(), sink, "text", engine, "in", chunk=500)  # type: ignore[arg-type]
    assert sink.lines_read_at_first_write <= 501
    assert [len(texts) for texts, _ in engine.calls] == [500] * 20
    assert sink.getvalue().count("\n") == 10_000


def test_bytes_that_are_not_utf8_are_named_by_their_offset() -> None:
    with pytest.raises(ConfigError, match=r"in, line 2: not UTF-8 \(byte 13: 0xe9\)"):
        run(b"All good.\ncaf\xe9 au lait\n", "text")


def test_the_format_comes_from_the_option_or_the_extension() -> None:
    assert document_format(Path("a.SRT"), None) == "srt"
    assert document_format(Path("a.vtt"), None) == "vtt"
    assert document_format(Path("a.txt"), None) == "text"
    assert document_format(Path("a.txt"), "srt") == "srt"
    with pytest.raises(ConfigError, match="--format ass: choose one of text, srt, vtt"):
        document_format(None, "ass")


def test_a_failed_translation_leaves_no_output_file(tmp_path: Path) -> None:
    source = tmp_path / "in.srt"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n\n2\nno timing\nBye.\n")
    target = tmp_path / "out.srt"
    with pytest.raises(ConfigError, match=r"in.srt, line 6: cue 2 has no timing line"):
        translate_inputs([], Document(source, target), Backwards(), 64)
    assert list(tmp_path.iterdir()) == [source]  # neither the output nor its temporary file


def test_an_empty_file_gives_an_empty_file(tmp_path: Path) -> None:
    source = tmp_path / "empty.txt"
    source.write_bytes(b"")
    translate_inputs([], Document(source, tmp_path / "out.txt"), Backwards(), 64)
    assert (tmp_path / "out.txt").read_bytes() == b""


# --------------------------------------------------------------------------- subtitles

SRT = (
    "1\n"
    "00:00:01,000 --> 00:00:02,500\n"
    "<i>I told him that</i>\n"
    "\n"
    "2\n"
    "00:00:02,600 --> 00:00:04,000 X1:40 X2:600\n"
    "he should leave the house\n"
    "before the night. Then he left.\n"
    "\n"
    "3\r\n"
    "00:00:05,000 --> 00:00:06,000\r\n"
    "- Hi, Tom.\r\n"
    "- Hello.\r\n"
    "\r\n"
    "4\n"
    "00:00:07,000 --> 00:00:08,000\n"
    "{\\an8}Wait.\n"
)


def test_an_srt_file_keeps_numbers_and_timings_and_spreads_a_sentence_over_its_cues() -> None:
    out, engine = run(SRT.encode(), "srt")
    # The sentence across cues 1 and 2 reached the engine whole; tags did not.
    assert "I told him that he should leave the house before the night." in engine.texts
    assert "Then he left." in engine.texts
    assert "Hi, Tom." in engine.texts and "Hello." in engine.texts
    assert out == (
        "1\n"
        "00:00:01,000 --> 00:00:02,500\n"
        "<i>I dlot mih</i>\n"  # its share of the sentence's words, in its tags
        "\n"
        "2\n"
        "00:00:02,600 --> 00:00:04,000 X1:40 X2:600\n"
        "taht eh dluohs evael eht esuoh erofeb\n"  # two lines, as it came, about as long
        "eht .thgin nehT eh .tfel\n"
        "\n"
        "3\r\n"
        "00:00:05,000 --> 00:00:06,000\r\n"
        "- ,iH .moT\r\n"  # dialogue lines stay lines, dashes kept
        "- .olleH\r\n"
        "\r\n"
        "4\n"
        "00:00:07,000 --> 00:00:08,000\n"
        "{\\an8}.tiaW\n"
    )


def test_a_vtt_file_keeps_its_header_notes_styles_and_cue_ids() -> None:
    vtt = (
        "WEBVTT - a film\n"
        "Kind: captions\n"
        "\n"
        "NOTE made by hand\n"
        "over two lines\n"
        "\n"
        "STYLE\n"
        "::cue { color: yellow }\n"
        "\n"
        "intro\n"
        "00:01.000 --> 00:02.000 align:start\n"
        "Good morning.\n"
        "\n"
        "00:02.500 --> 01:00:03.000\n"
        "<v Tom>See you.\n"
    )
    out, engine = run(vtt.encode(), "vtt")
    assert engine.texts == ["Good morning.", "See you."]
    assert out == vtt.replace("Good morning.", "dooG .gninrom").replace("See you.", "eeS .uoy")


SUBTITLE_TEXTS = st.lists(
    st.lists(
        st.sampled_from(["Yes.", "I know that", "you are here.", "- Run!", "ok", "Dr. No is"]),
        min_size=1,
        max_size=3,
    ),
    min_size=1,
    max_size=30,
)


@given(SUBTITLE_TEXTS, st.integers(1, 9))
def test_subtitles_round_trip_every_timing_and_no_cue_is_left_empty(
    cues: list[list[str]], chunk: int
) -> None:
    blocks = [
        f"{n}\n00:00:{n % 60:02d},000 --> 00:00:{n % 60:02d},900\n"
        + "".join(f"{t}\n" for t in text)
        for n, text in enumerate(cues, start=1)
    ]
    out, _ = run("\n".join(blocks).encode(), "srt", chunk=chunk)
    got = out.split("\n\n")
    assert len(got) == len(cues)
    for n, (block, text) in enumerate(zip(got, cues, strict=True), start=1):
        lines = block.strip("\n").split("\n")
        assert lines[:2] == [str(n), f"00:00:{n % 60:02d},000 --> 00:00:{n % 60:02d},900"]
        assert 1 <= len(lines) - 2 <= len(text) and all(line.strip() for line in lines[2:])
    words = [w for block in got for w in " ".join(block.split("\n")[2:]).split()]
    assert len(words) == sum(len(" ".join(t).split()) for t in cues)  # every word lands once


def test_a_malformed_cue_is_named_by_its_number_and_line() -> None:
    with pytest.raises(ConfigError, match=r"in, line 5: cue 2 should start with its number"):
        run(b"1\n00:00:01,000 --> 00:00:02,000\nHi.\n\nHello there.\n", "srt")
    with pytest.raises(ConfigError, match=r"in, line 1: a WebVTT file starts with WEBVTT"):
        run(b"1\n00:01.000 --> 00:02.000\nHi.\n", "vtt")


def test_a_translation_too_short_for_its_cues_is_made_again_cue_by_cue() -> None:
    """A sentence over three cues that comes back as one word: each cue's part of it is
    translated alone, so no cue is left empty, and each part once."""
    srt = (
        "1\n00:00:01,000 --> 00:00:02,000\nWell, I think\n\n"
        "2\n00:00:02,000 --> 00:00:03,000\nthat we\n\n"
        "3\n00:00:03,000 --> 00:00:04,000\nshould go. Now.\n"
    )
    calls: list[list[str]] = []

    def terse(texts: list[str], lines: list[int]) -> list[str]:
        calls.append(texts)
        return ["Sì." if len(t.split()) > 4 else backwards(t) for t in texts]

    sink = io.StringIO(newline="")
    translate_document(io.BytesIO(srt.encode()), sink, "srt", terse, "in")
    assert calls == [
        ["Well, I think that we should go.", "Now."],
        ["Well, I think", "that we", "should go."],
    ]
    texts = [block.split("\n")[2] for block in sink.getvalue().split("\n\n")]
    assert texts == [",lleW I kniht", "taht ew", "dluohs .og .woN"]
