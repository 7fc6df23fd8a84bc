"""Switching an SQLite database to WAL mode when several connections open it at once.

``PRAGMA journal_mode=WAL`` takes an exclusive lock to change the mode and does not wait on
the busy handler for it: when two processes (``notary watch`` and ``notary collect`` on one
audit store) or two pooled connections open a new database at the same moment, one of them
fails with "database is locked" (seen 15 times in 200 rounds of four openers). Once a
database is in WAL mode the setting is persistent and reading it takes no lock, so the
switch is retried briefly and skipped when the mode is already WAL.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

__all__ = ["enable_wal"]


def enable_wal(cursor: Any, *, timeout_s: float = 30.0) -> str:
    """Put the database of ``cursor`` (a DB-API cursor or ``sqlite3.Connection``) in WAL mode.

    Args:
        cursor: anything with ``execute(sql)`` returning rows (``fetchone``).
        timeout_s: how long to retry while another connection holds the lock, seconds.

    Returns:
        the journal mode afterwards, lowercase (``"wal"``; ``"memory"`` for an in-memory
        database, which has no WAL).

    Raises:
        sqlite3.OperationalError: still locked after ``timeout_s``, or any other error.
    """
    deadline = time.monotonic() + timeout_s
    delay_s = 0.005
    while True:
        try:
            mode = str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            if mode in ("wal", "memory"):
                return mode
            return str(cursor.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay_s > deadline:
                raise
        time.sleep(delay_s)
        delay_s = min(2 * delay_s, 0.1)
