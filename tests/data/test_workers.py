"""The cleaning workers: results in order, errors raised in the main process, nothing left
running when the caller stops early."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from translator.data import workers
from translator.data.clean import Cleaner, clean_chunk


def chunks(n: int, size: int = 50) -> list[list[tuple[str, str]]]:
    return [[(f"  pair {c} {i} ", f"coppia  {c} {i}") for i in range(size)] for c in range(n)]


def test_workers_give_the_chunks_back_in_order_as_cleaned_here() -> None:
    given = chunks(7)
    got = list(workers.clean_in_workers(iter(given), Cleaner(), workers=3))
    want = [clean_chunk(c, Cleaner()) for c in given]
    assert [g.pairs for g in got] == [w.pairs for w in want]
    assert [g.hashes.tolist() for g in got] == [w.hashes.tolist() for w in want]


def test_a_caller_that_stops_early_leaves_no_worker_running() -> None:
    stream = workers.clean_in_workers(iter(chunks(20)), Cleaner(), workers=2)
    next(stream)
    assert len(multiprocessing.active_children()) == 2
    stream.close()
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def test_an_error_in_a_worker_is_raised_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(pairs: list, cleaner: Cleaner) -> None:
        if pairs[0][0].strip().startswith("pair 3"):
            raise ValueError("chunk 3 is bad")
        return clean_chunk(pairs, cleaner)

    monkeypatch.setattr(workers, "clean_chunk", broken)  # forked workers see it too
    stream = workers.clean_in_workers(iter(chunks(6)), Cleaner(), workers=2)
    with pytest.raises(ValueError, match="chunk 3 is bad"):
        list(stream)
    assert multiprocessing.active_children() == []
