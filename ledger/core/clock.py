"""Injectable clocks: every piece of time-dependent logic takes one of these.

``Clock.now()`` returns Unix time in seconds (float). ``ManualClock`` lets tests advance
time without sleeping. ``MonotonicClock`` is for code that only measures intervals
(settle times, deadlines): its ``now()`` never goes back when the wall clock is set, but
its zero is arbitrary, so its values are not Unix times.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from ledger.core.errors import LimitError


class Clock(Protocol):
    """Source of wall-clock time, in seconds since the Unix epoch."""

    def now(self) -> float: ...


class SystemClock:
    """The real wall clock (``time.time``)."""

    def now(self) -> float:
        return time.time()


class MonotonicClock:
    """The monotonic clock (``time.monotonic``), seconds from an arbitrary zero.

    Fits ``Clock`` for code that only subtracts two readings; never use its values as
    dates.
    """

    def now(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to; thread-safe.

    Args:
        start_s: initial Unix time in seconds.
    """

    def __init__(self, start_s: float = 1_700_000_000.0) -> None:
        self._now = start_s
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (>= 0) and return the new time.

        Raises:
            LimitError: ``seconds`` is negative.
        """
        if seconds < 0:
            raise LimitError("a manual clock only moves forward")
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, now_s: float) -> None:
        """Jump to ``now_s`` (may go backwards, for clock-jump tests)."""
        with self._lock:
            self._now = now_s
