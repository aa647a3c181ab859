"""Stopping a training run cleanly: SIGINT/SIGTERM ask for a stop after the current step."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, Protocol


class Stoppable(Protocol):
    stop_requested: bool


class StopOnSignal:
    """SIGINT/SIGTERM ask the trainer to stop after the current step; a second SIGINT stops now."""

    def __init__(self, trainer: Stoppable) -> None:
        self.trainer = trainer
        self.previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.trainer.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.trainer.stop_requested = True
        print(
            f"\n{signal.Signals(signum).name}: stopping after this step and saving a checkpoint "
            "(Ctrl-C again to quit at once)",
            file=sys.stderr,
        )

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
