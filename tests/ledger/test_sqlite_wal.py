"""``ledger.sqlite_wal.enable_wal``: the switch to WAL waits out another connection's lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ledger.sqlite_wal import enable_wal


def locked_database(path: Path) -> sqlite3.Connection:
    """A connection holding an exclusive lock on a new rollback-journal database."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_switch_waits_until_the_lock_is_released(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    holder = locked_database(path)
    release = threading.Timer(0.3, holder.rollback)
    release.start()
    opener = sqlite3.connect(path, timeout=0)  # no busy handler: "locked" at once
    start = time.monotonic()
    try:
        assert enable_wal(opener, timeout_s=10) == "wal"
    finally:
        release.join()
        opener.close()
        holder.close()
    assert time.monotonic() - start >= 0.25
    with sqlite3.connect(path) as again:
        assert again.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_gives_up_after_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    holder = locked_database(path)
    opener = sqlite3.connect(path, timeout=0)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            enable_wal(opener, timeout_s=0.2)
    finally:
        opener.close()
        holder.close()


def test_in_memory_database_stays_in_memory_mode() -> None:
    with sqlite3.connect(":memory:") as conn:
        assert enable_wal(conn) == "memory"
