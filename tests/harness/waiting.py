"""Waiting for a condition: the one polling loop of the tests.

A test that waits for something another thread or process does (a block, a stage, a
service answering) polls it with ``wait_until`` and a deadline, never with a bare sleep.
Where running out of time is not itself the failure (collect what is there, then report
what is missing), catch ``WaitTimeout``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["WaitTimeout", "wait_until"]

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition still did not hold at its deadline.

    An ``AssertionError``, so that a test waiting in vain fails rather than errors.

    Attributes:
        what: what was awaited.
        timeout_s: how long it was awaited.
        last_error: the error the last try raised (one of the ``ignoring`` kinds), if any.
    """

    def __init__(self, what: str, timeout_s: float, last_error: BaseException | None) -> None:
        detail = "" if last_error is None else f" (last try: {type(last_error).__name__}: "
        detail += "" if last_error is None else f"{last_error})"
        super().__init__(f"timed out after {timeout_s} s waiting for {what}{detail}")
        self.what = what
        self.timeout_s = timeout_s
        self.last_error = last_error


def wait_until(
    predicate: Callable[[], T],
    timeout_s: float,
    interval_s: float = 0.05,
    *,
    what: str | Callable[[], str] = "the condition",
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``predicate`` every ``interval_s`` seconds until it returns a true value.

    The predicate is tried at once, then after each pause, and once more after the
    deadline passed, so a condition that holds in time is never missed.

    Args:
        predicate: the condition; its first true value is returned.
        timeout_s: the longest wait, seconds.
        interval_s: the pause between tries, seconds.
        what: what is awaited, for the error (a callable is called at the timeout, so the
            message can show the state reached).
        ignoring: exceptions of the predicate that count as "not yet" (a service still
            starting refuses connections).

    Raises:
        WaitTimeout: the predicate was still false (or raising) at the deadline.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        last_error: BaseException | None = None
        try:
            value = predicate()
        except ignoring as exc:
            last_error = exc
        else:
            if value:
                return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(what() if callable(what) else what, timeout_s, last_error)
        time.sleep(interval_s)
