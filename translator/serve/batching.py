"""Dynamic batching for `translator serve`: requests that arrive close together decode together.

One collector task on the event loop forms batches and hands each to a decode thread:

- a batch is formed only when a decode thread is free, so under load it takes whatever waits (up
  to serve.max_batch_sentences), and at rest the first request waits serve.batch_window_ms for
  company; after answers, it waits at most as long for the clients just answered, who
  usually ask again at once, and goes when as many requests wait as were answered and waiting
  then;
- a batch holds whole requests of one beam, oldest first; each request gets back its own slice;
- at most serve.max_queue sentences wait: a request that would pass it gets a 503 at once;
- a request not answered within serve.timeout_s gets a 503 (and leaves the queue).

One batch decodes at a time. With CTranslate2, its sentences are cut in like-length pieces
that its workers (`inter_threads`, one per core) take in turn (`decode_exported`); a batch each
per worker was slower (345 against 533 sentences/s under scripts/bench_serve.py): with the
clients waiting on their answers, two batches halve the sentences in each. With PyTorch, its
model decodes one batch at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from translator.config import ServeConfig
from translator.serve.body import RequestError

log = logging.getLogger("translator")

Decode = Callable[[list[str], int], list[str]]
RETRY_AFTER = {"Retry-After": "1"}


@dataclass(eq=False)  # compared by identity: a job leaves the queue by `remove`
class Job:
    """One request waiting: its sentences, beam, the future of its translations, when it came."""

    texts: list[str]
    beam: int
    future: asyncio.Future
    arrived: float


class Batcher:
    """Queue requests, decode them one batch at a time on a thread, answer each its own part."""

    def __init__(self, decode: Decode, limits: ServeConfig) -> None:
        self.decode = decode
        self.limits = limits
        self.pending: deque[Job] = deque()
        self.waiting = 0  # sentences in `pending`
        self.batches = 0  # batches and sentences decoded: /health shows them
        self.decoded = 0
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="translator-decode")
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        """Start the collector on the running event loop."""
        self._free = asyncio.Semaphore(1)  # the decode thread is free
        self._answered = 0.0  # loop time of the last answers
        self._expected = 0  # requests waiting then, and those answered: their clients come back
        self._arrived = asyncio.Event()
        self._task = asyncio.create_task(self._collect())

    async def stop(self) -> None:
        """Stop collecting; decodes under way finish in their threads."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def translate(self, texts: list[str], beam: int) -> list[str]:
        """The translations of `texts`, decoded with whatever requests come along."""
        limits = self.limits
        if self.waiting + len(texts) > limits.max_queue:
            raise RequestError(
                503,
                f"the server is busy: {self.waiting} sentences are waiting "
                f"(serve.max_queue {limits.max_queue}); try again in a second",
                RETRY_AFTER,
            )
        loop = asyncio.get_running_loop()
        job = Job(texts, beam, loop.create_future(), loop.time())
        self.pending.append(job)
        self.waiting += len(texts)
        self._arrived.set()
        try:
            return await asyncio.wait_for(job.future, limits.timeout_s)
        except TimeoutError:
            raise RequestError(
                503,
                f"no answer within serve.timeout_s ({limits.timeout_s:g} s): the server is "
                "overloaded; try again later",
                RETRY_AFTER,
            ) from None
        finally:  # answered, timed out, or the handler was cancelled: out of the queue
            if not job.future.done():
                job.future.cancel()
            self._forget(job)

    def _forget(self, job: Job) -> None:
        try:
            self.pending.remove(job)
        except ValueError:  # already taken into a batch
            return
        self.waiting -= len(job.texts)

    async def _collect(self) -> None:
        loop = asyncio.get_running_loop()
        window = self.limits.batch_window_ms / 1000
        while True:
            await self._free.acquire()
            while not self.pending:
                self._arrived.clear()
                await self._arrived.wait()
            await self._company(window)
            batch = self._take()
            if not batch:  # the ones waiting timed out meanwhile
                self._free.release()
                continue
            decoding = loop.run_in_executor(self._executor, self._decode, batch)
            decoding.add_done_callback(lambda done, batch=batch: self._answer(batch, done))

    async def _company(self, window: float) -> None:
        """Let company gather for the oldest request, then return. At rest: for `window` after
        it came. After answers: for `window` after them, but only until the clients just
        answered, quick to ask again, are back (as many requests wait as were answered and
        were waiting then). A full batch goes at once."""
        loop = asyncio.get_running_loop()
        oldest = self.pending[0].arrived
        after_answers = oldest <= self._answered + window  # else the server was at rest
        deadline = max(oldest, self._answered) + window
        while self.waiting < self.limits.max_batch_sentences:
            if after_answers and len(self.pending) >= self._expected:
                return
            delay = deadline - loop.time()
            if delay <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), delay)
            except TimeoutError:
                return
            if not self.pending:  # the ones waiting timed out meanwhile
                return

    def _take(self) -> list[Job]:
        """The oldest request and those after it with its beam, up to max_batch_sentences."""
        if not self.pending:
            return []
        beam, room = self.pending[0].beam, self.limits.max_batch_sentences
        batch, rest, size = [], deque(), 0
        for job in self.pending:
            if job.beam == beam and (not batch or size + len(job.texts) <= room):
                batch.append(job)
                size += len(job.texts)
            else:
                rest.append(job)
        self.pending = rest
        self.waiting -= size
        return batch

    def _decode(self, batch: list[Job]) -> list[str]:
        texts = [text for job in batch for text in job.texts]
        translations = self.decode(texts, batch[0].beam)
        assert len(translations) == len(texts), (len(translations), len(texts))
        return translations

    def _answer(self, batch: list[Job], done: asyncio.Future) -> None:
        self._free.release()
        self._answered = asyncio.get_running_loop().time()
        self._expected = len(self.pending) + len(batch)
        self.batches += 1
        self.decoded += sum(len(job.texts) for job in batch)
        error = RequestError(503, "the server is stopping") if done.cancelled() else None
        error = error or done.exception()
        if error is not None and not isinstance(error, RequestError):
            log.error("decoding a batch failed", exc_info=error)
        start = 0
        for job in batch:
            end = start + len(job.texts)
            if job.future.done():  # timed out while decoding
                pass
            elif error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(done.result()[start:end])
            start = end
