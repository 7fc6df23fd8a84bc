"""Ctrl-C for long-running commands (``notary watch``, ``notary collect --listen``): the
first one asks for a clean stop after the current step, a second one aborts at once."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from flows.cli.common import err

__all__ = ["stop_on_signals"]


@contextmanager
def stop_on_signals(
    stop: threading.Event, *, also: threading.Event | None = None
) -> Iterator[None]:
    """First SIGINT/SIGTERM sets ``stop`` (and ``also``, to end a wait on it); a second
    SIGINT raises ``KeyboardInterrupt``. Only in the main thread (elsewhere: no effect)."""

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        if also is not None:
            also.set()
        err.print("stopping after the current step… (Ctrl-C again to abort)")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
