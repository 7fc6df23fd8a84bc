"""The anchoring service's loops: one round, then a wait, until told to stop; and the
back-off of a call to an outside authority that failed.

The anchoring rounds (``ledger.anchor.service``), the RFC 3161 rounds
(``ledger.anchor.timestamping``) and the OpenTimestamps rounds
(``ledger.anchor.ots_stamping``) each run this way beside the others in the service's
event loop; the last two retry a failed TSA or calendar call with ``retry_delay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

__all__ = ["RETRY_BASE_S", "RETRY_MAX_S", "STALE_ATTEMPTS", "retry_delay", "run_rounds"]

#: A failed call to a TSA or calendar is tried again after this many seconds, doubled per
#: failed attempt before, at most ``RETRY_MAX_S``.
RETRY_BASE_S = 5.0
RETRY_MAX_S = 600.0
#: A root still waiting after this many failed attempts makes readiness say "degraded".
STALE_ATTEMPTS = 3

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


def retry_delay(
    attempts: int, *, base_s: float = RETRY_BASE_S, cap_s: float = RETRY_MAX_S
) -> float:
    """Seconds before the next try after ``attempts`` failed ones: ``base_s`` doubled per
    attempt, at most ``cap_s``."""
    return min(cap_s, base_s * 2**attempts)
