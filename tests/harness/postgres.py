"""The machine's PostgreSQL for the tests that run against it.

``PG_URL`` is the server (``NOTARY_TEST_POSTGRES_URL``; by default the one on
``127.0.0.1:5432``, database ``test``, where the development machine and CI run one).
Tests reach it through the ``postgres_url`` fixture (or ``postgres_or_skip``), which
checks once per session that it answers:

- by default an unreachable server skips those tests with the reason, so a developer
  without PostgreSQL still runs the rest;
- with ``--require-postgres`` or ``NOTARY_TEST_REQUIRE_POSTGRES=1`` (CI, and any machine
  that has the server) an unreachable server fails them with the reason, so the
  PostgreSQL half of the suite can never be skipped silently.

Each test makes its own schema or database on the server and drops it afterwards: a
schema with ``fresh_schema``; a database, when other processes must reach it by URL
alone: ``fresh_database``, or the ``postgres_database`` fixture.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.engine import make_url

__all__ = [
    "PG_URL",
    "REQUIRE_ENV",
    "REQUIRE_OPTION",
    "TableLock",
    "blocked_by",
    "conninfo",
    "fresh_database",
    "fresh_schema",
    "held_table_lock",
    "postgres_database",
    "postgres_or_skip",
    "postgres_required",
    "postgres_url",
    "unreachable_reason",
]

PG_URL = os.environ.get("NOTARY_TEST_POSTGRES_URL", "postgresql+psycopg://127.0.0.1:5432/test")
REQUIRE_ENV = "NOTARY_TEST_REQUIRE_POSTGRES"
REQUIRE_OPTION = "--require-postgres"
_CONNECT_TIMEOUT_S = 3


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--require-postgres`` (this module is a plugin of ``tests/conftest.py``)."""
    parser.addoption(
        REQUIRE_OPTION,
        action="store_true",
        default=False,
        help=(
            "fail, instead of skip, the tests that need PostgreSQL when it is not reachable "
            f"(also: {REQUIRE_ENV}=1)"
        ),
    )


def conninfo(url: str = PG_URL) -> str:
    """``url`` (an SQLAlchemy URL) as a libpq connection string for ``psycopg.connect``."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def unreachable_reason(url: str = PG_URL) -> str | None:
    """Why the server at ``url`` cannot be used now, or None when it answers."""
    import psycopg  # here: importing it costs time that most test modules do not need

    try:
        psycopg.connect(conninfo(url), connect_timeout=_CONNECT_TIMEOUT_S).close()
    except Exception as exc:  # any failure means: not usable here
        detail = " ".join(str(exc).split())  # libpq's message spans lines
        return f"PostgreSQL not reachable at {url}: {type(exc).__name__}: {detail}"
    return None


def postgres_required(config: pytest.Config) -> bool:
    """True when ``--require-postgres`` is given or ``NOTARY_TEST_REQUIRE_POSTGRES`` is set
    to a true value (``1``, ``true``, ``yes``, ``on``)."""
    flag = os.environ.get(REQUIRE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return flag or bool(config.getoption(REQUIRE_OPTION, default=False))


def postgres_or_skip(config: pytest.Config) -> str:
    """``PG_URL`` when the server answers; otherwise skip the test, or fail it when
    PostgreSQL is required (module docstring)."""
    reason = unreachable_reason(PG_URL)
    if reason is None:
        return PG_URL
    if postgres_required(config):
        pytest.fail(
            f"PostgreSQL is required here ({REQUIRE_OPTION} or {REQUIRE_ENV}=1) but cannot "
            "be used: start it, point NOTARY_TEST_POSTGRES_URL at one, or drop the switch "
            f"to skip these tests.\n{reason}",
            pytrace=False,
        )
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url(request: pytest.FixtureRequest) -> str:
    """The server's URL, checked once per session (``postgres_or_skip``)."""
    return postgres_or_skip(request.config)


@contextlib.contextmanager
def fresh_database(url: str = PG_URL, *, prefix: str = "notary_test") -> Iterator[str]:
    """A new, empty database on the server of ``url``, named ``<prefix>_<12 hex>``; yields
    its SQLAlchemy URL and drops it at exit, ending whatever sessions still use it."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(
        conninfo(url), autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S
    ) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield make_url(url).set(database=name).render_as_string(hide_password=False)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_schema(
    url: str = PG_URL, *, prefix: str = "notary_test", create: bool = False
) -> Iterator[str]:
    """A schema name of its own on the server of ``url``, ``<prefix>_<12 hex>``: created
    first when ``create`` (else left to the code under test), dropped with whatever it
    holds at exit."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    if create:
        with psycopg.connect(conninfo(url), autocommit=True) as admin:
            admin.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(conninfo(url), autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def postgres_database(postgres_url: str) -> Iterator[str]:
    """A fresh database for one test (``fresh_database``): its URL."""
    with fresh_database(postgres_url) as url:
        yield url


def blocked_by(watcher: Any, pid: int) -> int:
    """Sessions waiting, directly or behind another waiter, for a lock that session ``pid``
    holds. ``watcher`` is a ``psycopg`` connection in autocommit mode (in a transaction,
    ``pg_stat_activity`` would stay the snapshot of its first read)."""
    row = watcher.execute(
        "WITH RECURSIVE waiting(pid) AS ("
        " SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
        " UNION SELECT a.pid FROM pg_stat_activity a"
        " JOIN waiting w ON w.pid = ANY(pg_blocking_pids(a.pid)))"
        " SELECT count(*) FROM waiting",
        (pid,),
    ).fetchone()
    return int(row[0]) if row else 0


class TableLock:
    """An ``ACCESS EXCLUSIVE`` lock on one table, held by a session of its own (made by
    ``held_table_lock``): every other session that touches the table, even to read it,
    waits until ``release``."""

    def __init__(self, holder: Any, watcher: Any) -> None:
        self._holder, self._watcher = holder, watcher
        self.released_at: datetime | None = None

    def waiting(self) -> int:
        """How many sessions wait for the lock now (``blocked_by``)."""
        return blocked_by(self._watcher, self._holder.info.backend_pid)

    def release(self) -> datetime:
        """Let the waiting sessions go (the holder's transaction ends); when, aware UTC.
        A second call returns the first one's time."""
        if self.released_at is None:
            self._holder.rollback()
            self.released_at = datetime.now(UTC)
        return self.released_at


@contextlib.contextmanager
def held_table_lock(url: str, table: str) -> Iterator[TableLock]:
    """Lock ``table`` (its name in the default schema) of the database at ``url`` (an
    SQLAlchemy URL) for the test; released at exit if the test did not, so a failing test
    never leaves other processes waiting.

    Raises:
        psycopg.errors.UndefinedTable: no such table.
    """
    import psycopg
    from psycopg import sql

    with (
        psycopg.connect(conninfo(url), connect_timeout=_CONNECT_TIMEOUT_S) as holder,
        psycopg.connect(conninfo(url), autocommit=True) as watcher,
    ):
        holder.execute(
            sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(table))
        )
        lock = TableLock(holder, watcher)
        try:
            yield lock
        finally:
            lock.release()
