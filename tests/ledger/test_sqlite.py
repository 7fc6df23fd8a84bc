"""``ledger.sqlite``: the switch to WAL waits out another connection's lock
(``enable_wal``), and every engine made by ``create_sqlite_engine`` is set up alike."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import event, text

from ledger.sqlite import BEGIN_IMMEDIATE, Synchronous, create_sqlite_engine, enable_wal


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


@pytest.mark.parametrize(("synchronous", "level"), [("FULL", 2), ("NORMAL", 1)])
def test_engine_connections_get_wal_sync_foreign_keys_and_busy_timeout(
    tmp_path: Path, synchronous: Synchronous, level: int
) -> None:
    url = f"sqlite:///{tmp_path / 'sub' / 'a.db'}"
    engine = create_sqlite_engine(url, synchronous=synchronous)
    with engine.connect() as conn:
        pragma = {
            name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        }
    engine.dispose()
    assert pragma == {
        "journal_mode": "wal",
        "synchronous": level,
        "foreign_keys": 1,
        "busy_timeout": 30_000,
    }


def test_in_memory_engine_shares_one_database() -> None:
    engine = create_sqlite_engine("sqlite://", synchronous="FULL")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT x FROM t")).scalar_one() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "memory"
    engine.dispose()


def test_explicit_begin_is_immediate_only_with_the_option(tmp_path: Path) -> None:
    engine = create_sqlite_engine(
        f"sqlite:///{tmp_path / 'a.db'}", synchronous="FULL", explicit_begin=True
    )
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    with engine.execution_options(**{BEGIN_IMMEDIATE: True}).begin() as conn:
        conn.execute(text("SELECT 1"))
    with engine.begin() as conn:
        conn.execute(text("SELECT 1"))
    engine.dispose()
    assert [s for s in seen if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE", "BEGIN"]


def test_only_sqlite_urls() -> None:
    with pytest.raises(ValueError, match="not an SQLite URL"):
        create_sqlite_engine("postgresql+psycopg://127.0.0.1/test", synchronous="FULL")


def test_the_checkpoint_threshold_is_sqlites_unless_given(tmp_path: Path) -> None:
    def threshold(**options: int) -> int:
        engine = create_sqlite_engine(
            f"sqlite:///{tmp_path / f'{len(options)}.db'}", synchronous="NORMAL", **options
        )
        with engine.connect() as conn:
            value = conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar()
        engine.dispose()
        return int(value)

    assert threshold() == 1000
    assert threshold(wal_autocheckpoint_pages=10_000) == 10_000
