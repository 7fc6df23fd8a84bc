"""Database engine and transactions of the publishing API (SQLite by default, PostgreSQL by URL).

What ``multi_az`` means (README text)
-------------------------------------

A write (create chain, create entry) is answered ``202 Accepted`` with stage ``multi_az``
only after the database transaction holding it has committed; the writes that arrive
while one commit is running are committed together in the next one (group commit), and
each is answered when its own commit has returned. What "stored in several availability
zones" then means depends on the database behind the service:

* **SQLite** (the default, ``<data_dir>/api.sqlite``): the commit is in the write-ahead
  log of one file, and fsynced before the answer (``journal_mode=WAL``,
  ``synchronous=FULL``). It survives a crash of the service or of the machine, but it
  is one copy on one disk: there is no second zone. Back the disk up, or replicate the
  file, if losing that disk must not lose accepted writes. Use it for development, the
  bundled stack and single-machine installations.
* **PostgreSQL** (``NOTARY_API_DATABASE_URL=postgresql+psycopg://...``): the commit
  returns when the server has flushed its WAL, and, if the server is set up with
  synchronous standbys in other zones (``synchronous_standby_names``, with
  ``synchronous_commit = on`` or ``remote_apply``), only once those standbys have it too.
  Then ``multi_az`` is literally true: an accepted write survives the loss of the
  primary's zone. With asynchronous replication, or none, it is as durable as the
  primary's disk. Which of the two you get is the server's configuration, not the API's.

The API never answers 202 before that commit, and a restart resumes every accepted write
from the database (nothing is kept only in memory).

Transactions
------------

* SQLite runs in WAL mode with ``synchronous=FULL``: a commit returns after the WAL frame
  is fsynced. Write transactions start with ``BEGIN IMMEDIATE`` so two writers never
  deadlock on a read-to-write lock upgrade (they queue on ``busy_timeout`` instead). The
  connection set-up is ``ledger.sqlite.create_sqlite_engine``, shared with the audit store.
* PostgreSQL (``postgresql+psycopg://...``): a commit returns once the server has flushed
  its WAL (and replicated it synchronously when configured so, see above).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from ledger.api.models import Base
from ledger.dbjson import json_text, json_value
from ledger.sqlite import BEGIN_IMMEDIATE, create_sqlite_engine

__all__ = ["Database"]


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
        writer = (
            self.engine.execution_options(**{BEGIN_IMMEDIATE: True}) if self.is_sqlite else None
        )
        self._writer_engine: Engine = writer or self.engine
        self._readers = sessionmaker(self.engine, expire_on_commit=False)
        self._writers = sessionmaker(self._writer_engine, expire_on_commit=False)

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

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A Core connection in a write transaction (``BEGIN IMMEDIATE`` on SQLite).

        Commits at a normal exit (durable once the block has exited), rolls back on an
        exception. Used by the group-commit writer for its set-based batch statements.
        """
        with self._writer_engine.begin() as connection:
            yield connection

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def _build_engine(url: URL, connect_args: dict[str, Any]) -> Engine:
    if url.get_backend_name() != "sqlite":
        return create_engine(
            url,
            pool_pre_ping=True,
            connect_args=connect_args,
            json_serializer=json_text,
            json_deserializer=json_value,
        )
    return create_sqlite_engine(
        url,
        synchronous="FULL",
        explicit_begin=True,
        connect_args=connect_args,
        json_serializer=json_text,
        json_deserializer=json_value,
    )
