"""One way to open an SQLite database for SQLAlchemy: WAL, busy timeout, durability, foreign keys.

Used by every SQLAlchemy store on SQLite (the audit store, ``connectors.audit.engine``;
the publishing API's database, ``ledger.api.db``), so they cannot drift apart. Each
connection gets, in this order:

1. ``PRAGMA busy_timeout`` (30 s by default; also the driver's ``timeout``): a writer waits
   for another one's lock instead of failing with "database is locked";
2. WAL mode (``enable_wal``), switched safely when several connections open it at once;
3. ``PRAGMA synchronous`` as the store chooses (``FULL``: every commit is fsynced before it
   returns; ``NORMAL``: the WAL is fsynced at checkpoints, so a machine crash may lose the
   last commits but never corrupts the file, https://www.sqlite.org/pragma.html#pragma_synchronous);
4. ``PRAGMA foreign_keys=ON``.

Why ``enable_wal`` retries: ``PRAGMA journal_mode=WAL`` takes an exclusive lock to change
the mode and does not wait on the busy handler for it: when two processes (``notary watch``
and ``notary collect`` on one audit store) or two pooled connections open a new database at
the same moment, one of them fails with "database is locked" (seen 15 times in 200 rounds of
four openers). Once a database is in WAL mode the setting is persistent and reading it takes
no lock, so the switch is retried briefly and skipped when the mode is already WAL.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.pool import StaticPool

__all__ = [
    "BEGIN_IMMEDIATE",
    "BUSY_TIMEOUT_S",
    "Synchronous",
    "create_sqlite_engine",
    "enable_wal",
]

#: ``PRAGMA synchronous`` levels the stores use.
Synchronous = Literal["NORMAL", "FULL"]

#: How long a connection waits for another one's lock, seconds.
BUSY_TIMEOUT_S = 30.0

#: Execution option of an engine made with ``explicit_begin=True``: its transactions start
#: with ``BEGIN IMMEDIATE`` (``engine.execution_options(**{BEGIN_IMMEDIATE: True})``).
BEGIN_IMMEDIATE = "notary_sqlite_begin_immediate"


def create_sqlite_engine(
    url: str | URL,
    *,
    synchronous: Synchronous,
    explicit_begin: bool = False,
    connect_args: Mapping[str, Any] | None = None,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
    json_serializer: Callable[[Any], str] | None = None,
    json_deserializer: Callable[[str], Any] | None = None,
    wal_autocheckpoint_pages: int | None = None,
) -> Engine:
    """An engine on the SQLite database at ``url``, every connection set up as the module
    docstring says.

    Args:
        url: ``sqlite:///path/file.sqlite`` (the parent folder is created) or ``sqlite://``
            / ``sqlite:///:memory:`` (one connection shared by every user, ``StaticPool``,
            so they all see the same in-memory database; it has no WAL).
        synchronous: ``"FULL"`` or ``"NORMAL"`` (step 3 of the module docstring).
        explicit_begin: turn the driver's implicit transactions off and issue ``BEGIN``
            from SQLAlchemy's ``begin`` event: plain ``BEGIN``, or ``BEGIN IMMEDIATE`` on
            a connection with the ``BEGIN_IMMEDIATE`` execution option, so that writers
            queue on the busy timeout instead of deadlocking on a read-to-write lock
            upgrade. ``False`` keeps the driver's own (deferred) transactions.
        connect_args: extra arguments of ``sqlite3.connect`` (they win over the defaults
            ``check_same_thread=False`` and ``timeout=busy_timeout_s``).
        busy_timeout_s: step 1, seconds.
        json_serializer: how JSON columns are written (``None``: SQLAlchemy's default,
            ``json.dumps``).
        json_deserializer: how JSON columns are read (``None``: ``json.loads``).
        wal_autocheckpoint_pages: pages (4 KiB) the WAL may hold before a commit copies
            them back into the database (``PRAGMA wal_autocheckpoint``); ``None`` keeps
            SQLite's 1,000. A larger WAL rewrites a page changed by many commits once.

    Raises:
        ValueError: ``url`` is not an SQLite URL.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        raise ValueError(f"not an SQLite URL: {parsed.render_as_string()}")
    database = parsed.database or ""
    in_memory = database in ("", ":memory:")
    if not in_memory:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    # Pooled connections are handed from thread to thread, never used by two at once.
    args = {"check_same_thread": False, "timeout": busy_timeout_s, **(connect_args or {})}
    extra: dict[str, Any] = {"poolclass": StaticPool} if in_memory else {}
    if json_serializer is not None:
        extra["json_serializer"] = json_serializer
    if json_deserializer is not None:
        extra["json_deserializer"] = json_deserializer
    engine = create_engine(parsed, connect_args=args, **extra)
    busy_timeout_ms = round(busy_timeout_s * 1000)

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        if explicit_begin:
            dbapi_connection.isolation_level = None  # BEGIN comes from on_begin
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            enable_wal(cursor)  # a no-op answer ("memory") for an in-memory database
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            cursor.execute("PRAGMA foreign_keys=ON")
            if wal_autocheckpoint_pages is not None:
                cursor.execute(f"PRAGMA wal_autocheckpoint={int(wal_autocheckpoint_pages)}")
        finally:
            cursor.close()

    event.listen(engine, "connect", on_connect)
    if explicit_begin:
        event.listen(engine, "begin", _on_begin)
    return engine


def _on_begin(connection: Connection) -> None:
    immediate = connection.get_execution_options().get(BEGIN_IMMEDIATE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


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
