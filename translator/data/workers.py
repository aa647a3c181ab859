"""Cleaning chunks of pairs in worker processes, results in order, stoppable at any moment.

Each worker has its own pipe and at most one chunk at a time, sent only while it waits for one, so
neither side ever blocks on a full pipe. multiprocessing.Pool is not used: its task thread can be
caught writing a chunk into the shared queue when the workers are stopped, and then waits for a
reader forever (a Ctrl-C during a prepare hung so). Here the main process does all the writing,
and on Ctrl-C, SIGTERM or an error it kills the workers and goes on.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Iterator
from itertools import chain, islice
from multiprocessing.connection import Connection

from translator.data.clean import CleanedChunk, Cleaner, clean_chunk
from translator.data.read import Pair


def clean_in_workers(
    chunks: Iterator[list[Pair]], cleaner: Cleaner, workers: int
) -> Iterator[CleanedChunk]:
    """`clean_chunk` of each chunk, in order: in `workers` processes when there are two chunks or
    more and more than one worker, else here. Memory: one chunk per worker in flight."""
    head = list(islice(chunks, 2))
    chunks = chain(head, chunks)
    if len(head) < 2 or workers < 2:
        for chunk in chunks:
            yield clean_chunk(chunk, cleaner)
        return
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    procs: list = []
    pipes: list[Connection] = []
    try:
        for _ in range(workers):
            ours, theirs = context.Pipe()
            proc = context.Process(target=_work, args=(theirs, cleaner), daemon=True)
            proc.start()
            theirs.close()
            procs.append(proc)
            pipes.append(ours)
        idle = deque(range(workers))
        busy: deque[int] = deque()  # in the order their chunks were sent
        for chunk in chunks:
            if not idle:
                worker = busy.popleft()
                yield _result(pipes[worker])
                idle.append(worker)
            worker = idle.popleft()
            pipes[worker].send(chunk)
            busy.append(worker)
        while busy:
            yield _result(pipes[busy.popleft()])
        for pipe in pipes:
            pipe.send(None)  # the end: each worker returns
    except BaseException:  # Ctrl-C, SIGTERM, an error, or the caller stopped early
        for proc in procs:
            proc.kill()
        raise
    finally:
        for pipe in pipes:
            pipe.close()
        for proc in procs:
            proc.join(timeout=5)
            if proc.exitcode is None:
                proc.kill()
                proc.join()


def _result(pipe: Connection) -> CleanedChunk:
    try:
        ok, value = pipe.recv()
    except EOFError:
        raise RuntimeError("a cleaning worker process died (out of memory?)") from None
    if not ok:
        raise value
    return value


def _work(pipe: Connection, cleaner: Cleaner) -> None:
    """A worker: clean each chunk received, send it back; return at the end of the input. Ctrl-C
    is left to the main process, which stops the workers (a forked worker must not keep the
    main process's handler that turns SIGTERM into Ctrl-C either)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            chunk = pipe.recv()
        except (EOFError, OSError):
            return
        if chunk is None:
            return
        try:
            reply = (True, clean_chunk(chunk, cleaner))
        except Exception as exc:  # sent to the main process, raised there
            reply = (False, exc)
        try:
            pipe.send(reply)
        except (BrokenPipeError, OSError):
            return
