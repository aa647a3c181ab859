"""A request's body, read and checked: every way it can be wrong is a RequestError (a 4xx JSON).

The body is read incrementally and cut off at its limit, after a Content-Length above the limit
has already been refused unread; the JSON parser's own failures (nesting too deep, a number too
long to convert, bytes that are not UTF-8) are caught like any other malformed JSON.
"""

from __future__ import annotations

import json
from typing import Any

from translator.config import ServeConfig

MAX_DIGITS = 20
"""Longest number a body may hold (Python refuses ints of over 4,300 digits with a ValueError)."""


class RequestError(Exception):
    """Bad input (or no room for it): answered with `status`, {"error": message} and `headers`."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


def body_limit(limits: ServeConfig) -> int:
    """Most bytes a request body may have: room for max_texts sentences of max_chars characters
    (4 bytes each, the longest UTF-8 character), plus the JSON around them."""
    return 4 * limits.max_texts * limits.max_chars + 4096


def check_length_header(value: str | None, limit: int) -> None:
    """Refuse a declared Content-Length above `limit` before a byte of the body is read."""
    if value is None:
        return
    value = value.strip()
    if not (value.isascii() and value.isdigit()):
        raise RequestError(400, f"Content-Length {value[:40]!r} is not a number of bytes")
    if len(value) > MAX_DIGITS or int(value) > limit:
        raise RequestError(
            413, f"request body of {value[:40]} bytes is too large; at most {limit:,} bytes"
        )


async def read_body(chunks: Any, limit: int) -> bytes:
    """The body from an async iterator of byte chunks, refused once it passes `limit` bytes."""
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise RequestError(
                413, f"request body too large: cut off at {limit:,} bytes; send fewer sentences"
            )
    return bytes(body)


def _small_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number of {len(digits)} digits; at most {MAX_DIGITS}")
    return int(digits)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def load_json(body: bytes) -> Any:
    """The parsed body, or a 400 RequestError naming what the parser could not take."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(
            400, f"malformed JSON: the body is not UTF-8 (byte {exc.start}); send UTF-8"
        ) from None
    try:
        return json.loads(text, parse_int=_small_int, parse_constant=_no_constant)
    except RecursionError:
        raise RequestError(400, "malformed JSON: nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError included
        raise RequestError(400, f"malformed JSON: {exc}") from None


def parse_request(body: bytes, content_type: str, default_beam: int, max_beam: int) -> Any:
    """The request's `text` (unchecked) and beam, or a RequestError saying what is wrong."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise RequestError(
            415, f"send JSON with Content-Type: application/json, not {content_type[:80]!r}"
        )
    data = load_json(body)
    if not isinstance(data, dict):
        raise RequestError(422, 'the body must be a JSON object: {"text": ["..."], "beam": 4}')
    return data, _beam(data.get("beam", default_beam), max_beam)


def _beam(beam: Any, max_beam: int) -> int:
    if not isinstance(beam, int) or isinstance(beam, bool) or not 1 <= beam <= max_beam:
        raise RequestError(422, f"beam must be an integer from 1 to {max_beam}")
    return beam


def check_keys(data: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Refuse a key not in `allowed`, naming it."""
    unknown = set(data) - set(allowed)
    if unknown:
        raise RequestError(
            422, f"unknown key {sorted(unknown)[0][:40]!r}; the keys are {', '.join(allowed)}"
        )


def parse_texts(texts: Any, limits: ServeConfig) -> list[str]:
    """`text`: a non-empty list of strings within the configured limits."""
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise RequestError(422, '"text" must be a list of strings')
    if not texts:
        raise RequestError(422, '"text" is empty; send at least one text')
    if len(texts) > limits.max_texts:
        raise RequestError(
            413, f'"text" has {len(texts)} texts; at most {limits.max_texts} per request'
        )
    for n, text in enumerate(texts):
        if len(text) > limits.max_chars:
            raise RequestError(
                413, f"text {n} has {len(text)} characters; at most {limits.max_chars}"
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise RequestError(
                422, f"text {n} holds a lone surrogate (\\ud800-\\udfff); send valid Unicode"
            ) from None
    return texts
