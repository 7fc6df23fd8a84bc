"""Database engine and transactions of the publishing API (SQLite by default, PostgreSQL by URL).

Durability: a write answered with HTTP 202 has been committed by ``Database.write()`` first.

* SQLite runs in WAL mode with ``synchronous=FULL``: a commit returns after the WAL frame
  is fsynced, so the row survives ``kill -9`` and power loss of that one disk.
  Write transactions start with ``BEGIN IMMEDIATE`` so two writers never deadlock on a
  read-to-write lock upgrade (they queue on ``busy_timeout`` instead).
* PostgreSQL (``postgresql+psycopg://...``): a commit returns once the server has flushed
  its WAL; with ``synchronous_commit`` and synchronous standbys configured on the server,
  that includes replication to the standbys.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from ledger.api.models import Base

__all__ = ["Database"]

_IMMEDIATE = "notary_sqlite_begin_immediate"
_SQLITE_BUSY_TIMEOUT_MS = 30_000


class Database:
    """Engine plus session factories for one database URL.

    Args:
        url: SQLAlchemy URL (``sqlite:///path/api.sqlite``, ``sqlite://`` for memory,
            ``postgresql+psycopg://user@host:5432/db``).
        connect_args: extra DBAPI connect arguments (e.g. ``{"options": "-csearch_path=x"}``).

    Use ``read()`` for queries and ``write()`` for transactions that must be durable
    before the caller is answered. Call ``dispose()`` when done.
    """

    def __init__(self, url: str | URL, *, connect_args: dict[str, Any] | None = None) -> None:
        self.url = make_url(url)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        self.engine = _build_engine(self.url, connect_args or {})
        writer = self.engine.execution_options(**{_IMMEDIATE: True}) if self.is_sqlite else None
        self._readers = sessionmaker(self.engine, expire_on_commit=False)
        self._writers = sessionmaker(writer or self.engine, expire_on_commit=False)

    def create_schema(self) -> None:
        """Create every table and index that does not exist yet (idempotent)."""
        Base.metadata.create_all(self.engine)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reads; closed at exit (its transaction is rolled back, nothing kept).

        Objects loaded stay usable, detached, with the attributes they had.
        """
        with self._readers() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits at a normal exit and rolls back on an exception.

        When the ``with`` block has exited normally the commit is durable (module docstring).
        """
        with self._writers() as session, session.begin():
            yield session

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def _build_engine(url: URL, connect_args: dict[str, Any]) -> Engine:
    if url.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    database = url.database or ""
    in_memory = database in ("", ":memory:")
    if not in_memory:
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    args = {"check_same_thread": False, "timeout": _SQLITE_BUSY_TIMEOUT_MS / 1000, **connect_args}
    extra: dict[str, Any] = {"poolclass": StaticPool} if in_memory else {}
    engine = create_engine(url, connect_args=args, **extra)
    _install_sqlite_hooks(engine, wal=not in_memory)
    return engine


def _install_sqlite_hooks(engine: Engine, *, wal: bool) -> None:
    """WAL + synchronous=FULL on every connection; explicit BEGIN (IMMEDIATE for writers)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        if wal:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={_SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get(_IMMEDIATE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
