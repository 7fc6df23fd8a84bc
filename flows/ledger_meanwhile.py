"""Recording the ``ledger`` stage while the flow still hashes and publishes.

Without it the flow waits for the ``ledger`` stage only after the last document is
published, and then verifies and stores every receipt: at 100,000 files in the entry mode
that was 75 s of the run after 90 s of hashing and publishing, while the flow's process
used under half a core during the publishing. ``ledger_meanwhile`` sweeps in a thread of
its own at each new directory block during the publishing (``tasks.ledger_stage.
sweep_while``: receipts are verified locally before they are stored, as in every sweep),
so the final ``wait_ledger`` finds only the last blocks' entries left.

The thread's sweeps are plain calls, not task runs: the ``wait-for-ledger`` task run that
follows records the stage as before, and sweeps every row still waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from flows.pipeline import RunSummary, Services
from tasks.ledger_stage import sweep_while

__all__ = ["ledger_meanwhile"]


@contextmanager
def ledger_meanwhile(
    summary: RunSummary, services: Services, *, collection: str | None
) -> Iterator[None]:
    """Sweep the ``ledger`` stage in a thread while the ``with`` block runs.

    On leaving, the thread finishes the sweep under way and stops; the receipts it
    rejected are added to ``summary.receipts_rejected``.

    Raises:
        Exception: what a sweep raised (an audit store error; an unreachable node is
            tried again instead), on leaving the block unless the block itself raised.
    """
    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome = sweep_while(
                services.store,
                services.node,
                running=lambda: not stop.is_set(),
                collection=collection,
                sleep=stop.wait,
            )
        except BaseException as exc:  # handed to the flow's thread on leaving
            failure.append(exc)
            return
        summary.receipts_rejected += outcome.rejected

    thread = threading.Thread(target=run, name="ledger-meanwhile", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    if failure:
        raise failure[0]
