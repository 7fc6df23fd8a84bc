"""Results of work done on a worker thread, handed back to the event loops that wait.

The store's group-commit writer and the signature checker both finish items on their own
thread; each item carries the loop and future of its caller. ``settle`` resolves a
finished group with one ``call_soon_threadsafe`` per loop (not one per item), so a group
of hundreds costs its loop one wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any, Protocol

__all__ = ["Settleable", "settle"]


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
