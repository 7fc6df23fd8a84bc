"""A run's heartbeat: a thread that renews the run's ``heartbeat_at`` while it runs.

A run killed with its process stops beating; the next run (or ``collect``) then marks it
``crashed`` (``connectors.audit.runs``). The thread only writes one row now and then; a
failed write is logged and tried again at the next beat (the store may be restarting).
"""

from __future__ import annotations

import logging
import threading

from connectors.audit import AuditStore

__all__ = ["RunHeartbeat"]

logger = logging.getLogger(__name__)


class RunHeartbeat:
    """Renew run ``run_id``'s heartbeat every ``interval_s`` seconds until ``stop()`` (or
    the end of a ``with`` block).

    Args:
        store: the audit store the run is recorded in.
        run_id: ``AuditStore.start_run``'s id (its first beat is its start).
        interval_s: seconds between beats (``NOTARY_RUN_HEARTBEAT_S``), > 0.

    Raises:
        ValueError: ``interval_s`` <= 0.
    """

    def __init__(self, store: AuditStore, run_id: int, *, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self._store, self._run_id, self._interval_s = store, run_id, interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"run-{run_id}-heartbeat", daemon=True
        )
        self._thread.start()

    def _beat(self) -> None:
        while not self._stopped.wait(self._interval_s):
            try:
                self._store.runs.heartbeat(self._run_id)
            except Exception as exc:  # noqa: BLE001 - a beat missed is retried at the next
                logger.warning("run %d: heartbeat not recorded (%s)", self._run_id, exc)

    def __enter__(self) -> RunHeartbeat:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop beating (idempotent); returns once the thread has ended."""
        self._stopped.set()
        self._thread.join()
