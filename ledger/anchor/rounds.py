"""The anchoring service's loops: one round, then a wait, until told to stop.

The anchoring rounds (``ledger.anchor.service``), the RFC 3161 rounds
(``ledger.anchor.timestamping``) and the OpenTimestamps rounds
(``ledger.anchor.ots_stamping``) each run this way beside the others in the service's
event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

__all__ = ["run_rounds"]

log = logging.getLogger(__name__)


async def run_rounds(
    step: Callable[[], Awaitable[object]], stop: asyncio.Event, *, interval_s: float, what: str
) -> None:
    """Await ``step()`` every ``interval_s`` seconds until ``stop`` is set (the wait ends
    early when it is). A round that raises is logged as "``what`` round failed" and the
    next one runs as usual: a node restarting or an authority down must not end the loop.
    """
    while not stop.is_set():
        try:
            await step()
        except Exception as exc:
            log.warning("%s round failed: %s", what, exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval_s)
