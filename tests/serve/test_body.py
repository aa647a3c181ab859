"""Reading and parsing a request body, without a server: the parser's own limits become 4xx."""

from __future__ import annotations

import asyncio

import pytest

from translator.config import ServeConfig
from translator.serve.body import (
    RequestError,
    body_limit,
    check_length_header,
    load_json,
    read_body,
)

HOSTILE = [
    (b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    (b'{"beam": 1' + b"0" * 5000 + b"}", "5001 digits"),
    (b'{"beam": -' + b"9" * 30 + b"}", "31 digits"),
    (b'{"text": ["\xff"]}', r"not UTF-8 \(byte 11\)"),
    (b'{"beam": Infinity}', "Infinity is not JSON"),
    (b'{"text": ["a"', "malformed JSON"),
]


@pytest.mark.parametrize(("body", "message"), HOSTILE)
def test_what_the_parser_cannot_take_is_a_400(body: bytes, message: str) -> None:
    with pytest.raises(RequestError, match=message) as error:
        load_json(body)
    assert error.value.status == 400


def test_numbers_within_the_limit_parse() -> None:
    assert (
        load_json(b'{"beam": 12345678901234567890, "x": 1.5e300}')["beam"] == 12345678901234567890
    )


@pytest.mark.parametrize(
    ("value", "status"), [("5057", 413), ("9" * 5000, 413), ("12a", 400), ("-1", 400)]
)
def test_a_declared_length_is_checked_before_reading(value: str, status: int) -> None:
    limit = body_limit(ServeConfig(max_texts=4, max_chars=60))
    assert limit == 5056
    check_length_header("5056", limit)
    check_length_header(None, limit)  # chunked: cut off while reading instead
    with pytest.raises(RequestError) as error:
        check_length_header(value, limit)
    assert error.value.status == status


def test_a_stream_is_cut_off_at_the_limit_without_reading_the_rest() -> None:
    taken = []

    async def endless() -> object:
        while True:
            taken.append(1)
            yield b"x" * 1000

    with pytest.raises(RequestError, match="cut off at 5,000 bytes") as error:
        asyncio.run(read_body(endless(), 5000))
    assert error.value.status == 413 and len(taken) == 6
