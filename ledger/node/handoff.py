"""Work done on a worker thread in groups, its results handed back to the event loops.

The store's group-commit writer and the signature checker both finish items on their own
thread; each item carries the loop and future of its caller. ``GroupWorker`` is that
thread: it takes what is queued in groups (everything queued while it worked goes in the
next group) and hands each group to its owner's function. ``settle`` resolves a finished
group with one ``call_soon_threadsafe`` per loop (not one per item), so a group of
hundreds costs its loop one wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["GroupWorker", "Settleable", "settle"]

T = TypeVar("T")


class Settleable(Protocol):
    """A finished item: its caller's ``loop`` and ``future``, and a ``result`` or ``error``."""

    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    result: Any
    error: BaseException | None


def settle(items: Iterable[Settleable]) -> None:
    """Resolve every item's future on its own loop (call from the worker thread)."""
    by_loop: dict[int, tuple[asyncio.AbstractEventLoop, list[Settleable]]] = {}
    for item in items:
        by_loop.setdefault(id(item.loop), (item.loop, []))[1].append(item)
    for loop, group in by_loop.values():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_resolve, group)


def _resolve(items: list[Settleable]) -> None:
    for item in items:
        if item.future.done():
            continue
        if item.error is not None:
            item.future.set_exception(item.error)
        else:
            item.future.set_result(item.result)


class GroupWorker(Generic[T]):
    """One daemon thread that runs ``work(group)`` on the items queued, in queue order.

    A group is the first item waiting plus everything queued meanwhile, at most
    ``max_group`` items (no bound when None). ``work`` settles its items itself and must
    not raise. :meth:`close` lets the thread finish every item queued before it.

    Args:
        work: called on the worker thread with each group (a non-empty list).
        name: the thread's name.
        max_group: most items in one group, >= 1, or None.
    """

    def __init__(
        self, work: Callable[[list[T]], None], *, name: str, max_group: int | None = None
    ) -> None:
        self._work = work
        self._max_group = max_group
        self._queue: queue.SimpleQueue[T | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self.closed = False

    def put(self, item: T) -> None:
        """Queue ``item`` for the next group."""
        self._queue.put(item)

    def close(self, timeout_s: float = 30.0) -> None:
        """Finish the items queued, then stop the thread (waits ``timeout_s``; idempotent)."""
        if self.closed:
            return
        self.closed = True
        self._queue.put(None)
        self._thread.join(timeout=timeout_s)

    def _run(self) -> None:
        limit = self._max_group
        while True:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            stop = False
            while limit is None or len(group) < limit:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                group.append(more)
            self._work(group)
            if stop:
                return
