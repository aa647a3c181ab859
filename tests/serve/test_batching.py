"""The Batcher alone, with a fake decoder that says what it was given: no model, no HTTP."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace

import pytest

from translator.config import ServeConfig
from translator.serve.batching import Batcher
from translator.serve.body import RequestError

LIMITS = ServeConfig(max_texts=8, batch_window_ms=50, max_batch_sentences=12, max_queue=40)


class FakeDecoder:
    """Answers each sentence with "sentence|beam|batch size"; records the batches it got."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds, self.batches = seconds, []
        self.running, self.most_at_once = 0, 0
        self.lock = threading.Lock()

    def __call__(self, texts: list[str], beam: int) -> list[str]:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.batches.append((beam, list(texts)))
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        return [f"{text}|{beam}|{len(texts)}" for text in texts]


async def _clients(batcher: Batcher, requests: list[tuple[list[str], int]]) -> list:
    await batcher.start()
    try:
        return await asyncio.gather(
            *(batcher.translate(texts, beam) for texts, beam in requests), return_exceptions=True
        )
    finally:
        await batcher.stop()


def test_requests_are_batched_by_beam_and_each_gets_its_own_answers() -> None:
    decoder = FakeDecoder()
    requests = [([f"r{r}s{s}" for s in range(1 + r % 4)], 1 + r % 3) for r in range(18)]
    answers = asyncio.run(_clients(Batcher(decoder, replace(LIMITS, max_queue=100)), requests))
    for (texts, beam), answer in zip(requests, answers, strict=True):
        assert [a.rsplit("|", 2)[:2] for a in answer] == [[t, str(beam)] for t in texts]
    assert len(decoder.batches) < len(requests)  # they were decoded together
    for beam, texts in decoder.batches:
        assert len(texts) <= LIMITS.max_batch_sentences
        assert {t.split("s")[0] for t in texts} <= {f"r{r}" for r in range(18) if 1 + r % 3 == beam}
    assert max(len(texts) for _, texts in decoder.batches) > 4  # more than one request


def test_batches_decode_one_at_a_time() -> None:
    decoder = FakeDecoder(seconds=0.02)
    limits = replace(LIMITS, batch_window_ms=0, max_batch_sentences=2)
    requests = [([f"s{n}"], 1) for n in range(10)]
    asyncio.run(_clients(Batcher(decoder, limits), requests))
    assert decoder.most_at_once == 1 and len(decoder.batches) >= 5


def test_answered_clients_that_ask_again_go_without_waiting_out_the_window() -> None:
    # Clients that ask again as soon as they are answered. The window (10 s) is for requests
    # that come at rest; once as many requests wait as were answered and waiting then, the
    # batch goes. a, b, c fill the first batch (12 sentences) and go at once; d comes while it
    # decodes; from then on the four go together, each round, without waiting the 10 s.
    limits = replace(LIMITS, batch_window_ms=10_000, max_batch_sentences=12)
    decoder = FakeDecoder(seconds=0.1)
    batcher = Batcher(decoder, limits)

    async def client(name: str, first_size: int, rounds: int) -> None:
        await batcher.translate([name] * first_size, 1)
        for round_ in range(1, rounds):
            await batcher.translate([f"{name}{round_}"], 1)

    async def scenario() -> None:
        await batcher.start()
        try:
            first = asyncio.gather(*(client(name, 4, 5) for name in "abc"))
            await asyncio.sleep(0.05)
            await asyncio.wait_for(asyncio.gather(first, client("d", 1, 4)), timeout=5)
        finally:
            await batcher.stop()

    asyncio.run(scenario())
    assert [len(texts) for _, texts in decoder.batches] == [12, 4, 4, 4, 4]


def test_a_full_queue_answers_503_with_retry_after_at_once() -> None:
    limits = replace(LIMITS, batch_window_ms=300, max_queue=10)
    requests = [(["a"] * 8, 1), (["b"] * 3, 1), (["c"] * 2, 1)]  # 8 + 3 > 10; 8 + 2 fits
    answers = asyncio.run(_clients(Batcher(FakeDecoder(), limits), requests))
    assert isinstance(answers[0], list) and isinstance(answers[2], list)
    error = answers[1]
    assert isinstance(error, RequestError) and error.status == 503
    assert error.headers["Retry-After"] == "1" and "serve.max_queue" in str(error)


def test_a_request_that_waits_too_long_answers_503_and_leaves_the_queue() -> None:
    limits = replace(LIMITS, batch_window_ms=0, timeout_s=0.2)
    decoder = FakeDecoder(seconds=0.5)
    batcher = Batcher(decoder, limits)

    async def scenario() -> list:
        await batcher.start()
        first = asyncio.create_task(batcher.translate(["slow"], 1))
        await asyncio.sleep(0.05)  # "slow" is decoding: "late" waits, and times out
        late = await asyncio.gather(batcher.translate(["late"], 2), return_exceptions=True)
        waiting = batcher.waiting
        await asyncio.gather(first, return_exceptions=True)
        await asyncio.sleep(0.6)  # the decoder is free again: "late" must not reach it
        await batcher.stop()
        return [*late, waiting]

    error, waiting = asyncio.run(scenario())
    assert isinstance(error, RequestError) and error.status == 503
    assert "serve.timeout_s" in str(error) and waiting == 0
    assert [texts for _, texts in decoder.batches] == [["slow"]]


def test_a_failed_decode_fails_its_requests_only() -> None:
    def decode(texts: list[str], beam: int) -> list[str]:
        if "boom" in texts:
            raise RuntimeError("boom")
        return texts

    limits = replace(LIMITS, batch_window_ms=0, max_batch_sentences=1)
    answers = asyncio.run(_clients(Batcher(decode, limits), [(["boom"], 1), (["fine"], 1)]))
    assert isinstance(answers[0], RuntimeError) and answers[1] == ["fine"]


@pytest.mark.parametrize("key", ["max_queue", "max_batch_sentences", "timeout_s"])
def test_limits_must_be_positive(key: str) -> None:
    from translator.errors import ConfigError

    with pytest.raises(ConfigError, match=f"serve.{key}"):
        replace(LIMITS, **{key: 0}).validate()
