"""The SQL audit store: the pipeline's record of truth (documents, notarizations, receipts).

``AuditStore(url)`` works on SQLite (default; a file in WAL mode) and PostgreSQL
(``postgresql+psycopg://host:port/db``). It composes one repository per aggregate, each
its own module over the same engine and clock, and every public method of a repository is
one transaction that takes or returns a whole batch, so thousands of documents cost a
handful of statements::

    store.notarizations  notarizations.Notarizations  documents, notarizations, stages, events
    store.batches        batches.Batches              batches of aggregated documents, members
    store.proofs         proofs.Proofs                receipts and anchors
    store.collections    collections.Collections      secret key, identifier, mode, chain
    store.runs           runs.Runs                    flow runs, counts per stage
    store.timestamps     timestamps.Timestamps        independent timestamps per block

Beside them: ``records`` / ``models`` (the value records and stage names / the tables),
``stages`` (the one stage move and its life cycle), ``sql`` (queries and row conversions),
``dialect`` (what differs between SQLite and PostgreSQL), ``paths`` (members' audit paths
rebuilt), ``engine`` (connecting) and ``backlog`` (what waits for an anchor).

A document hash is notarized at most once per chain (UNIQUE(chain_id, sha256)); duplicates
are ignored with ``INSERT ... ON CONFLICT DO NOTHING`` (SQLite >= 3.35 and PostgreSQL).
Other SQL backends are refused with ``ValueError``. The anchor stage:
``proofs.awaiting_anchor`` / ``proofs.awaiting_anchor_blocks`` list what waits for it,
``proofs.record_anchors`` stores verified anchors (one per notarization, by directory
block) and moves ``ledger`` rows to ``anchor``.

Hex values (sha256, entry hashes, key Merkle roots, chain ids) are 64-char strings and are
stored lowercase. Times are timezone-aware UTC ``datetime`` values from the injected clock.

The schema is managed by Alembic (``connectors.migrations``): opening a store upgrades the
database to the newest revision, stamping one made by ``create_all`` before migrations
existed (``MigrationError`` when existing tables do not match).
"""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool

from connectors import migrations
from connectors.audit.batches import Batches
from connectors.audit.collections import Collections
from connectors.audit.engine import build_engine
from connectors.audit.notarizations import Notarizations
from connectors.audit.paths import BatchTrees
from connectors.audit.proofs import Proofs
from connectors.audit.runs import Runs
from connectors.audit.timestamps import Timestamps
from connectors.store_modes import owner_only_sqlite
from ledger.core.clock import Clock, SystemClock

__all__ = ["AuditStore"]

_log = logging.getLogger(__name__)


class AuditStore:
    """Batch-oriented access to the audit tables, one repository per aggregate (module
    docstring): ``notarizations``, ``batches``, ``proofs``, ``collections``, ``runs``,
    ``timestamps``.

    Args:
        url: SQLAlchemy URL: ``sqlite:///path/audit.db`` (parent folder created; WAL mode),
            ``sqlite://`` (in memory) or ``postgresql+psycopg://host:port/db``.
        clock: source of time (``now() -> float`` Unix seconds); the wall clock by default.
        schema: PostgreSQL schema to hold the tables (created if missing), set as the
            connections' ``search_path`` so raw SQL finds the tables too; ``None`` for the
            server's default search path. Not supported on SQLite.
        create_tables: bring the schema up to date now (``create_tables()``).
        connect_retry_s: PostgreSQL only: how long a new connection is tried again while
            the server refuses connections because it is restarting, seconds (0: never).
            Together with the pool's ping before use, a server restart shorter than this
            costs a pause, not a failed run.

    Raises:
        ValueError: a backend other than SQLite or PostgreSQL, or ``schema`` on SQLite.
        MigrationError: the database holds tables that are not a recognisable audit store.
        StoreExposedError: an SQLite file readable by others that cannot be made
            owner-only (``connectors.store_modes``: it would expose the collection keys).
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock | None = None,
        schema: str | None = None,
        create_tables: bool = True,
        connect_retry_s: float = 30.0,
    ) -> None:
        _owner_only(url)  # before a collection key is written (connectors.store_modes)
        engine = build_engine(url, schema=schema, connect_retry_s=connect_retry_s)
        clock = clock or SystemClock()
        trees = BatchTrees()  # members' audit paths, rebuilt when read
        self._engine = engine
        self._clock = clock
        self._schema = schema
        self.notarizations = Notarizations(engine, clock=clock)
        self.batches = Batches(engine, clock=clock, trees=trees)
        self.proofs = Proofs(engine, clock=clock, trees=trees)
        self.collections = Collections(engine, clock=clock)
        self.runs = Runs(engine, clock=clock)
        self.timestamps = Timestamps(engine, clock=clock)
        if create_tables:
            self.create_tables()

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for migrations and reports)."""
        return self._engine

    @property
    def one_connection(self) -> bool:
        """True when every thread shares one database connection (an in-memory SQLite
        store): its users must not write from two threads at once."""
        return isinstance(self._engine.pool, StaticPool)

    def create_tables(self) -> None:
        """Create the schema (PostgreSQL, when given) and migrate the audit tables to the
        newest revision (``connectors.migrations.upgrade``; a no-op when up to date).

        Raises:
            MigrationError: existing tables that do not match any revision.
        """
        if self._schema is not None:
            with self._engine.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"'))
        migrations.upgrade(self._engine)

    def schema_revision(self) -> str | None:
        """The Alembic revision of the database (``migrations.HEAD_REVISION`` once open)."""
        return migrations.current_revision(self._engine)

    def close(self) -> None:
        """Dispose of the connection pool."""
        self._engine.dispose()

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _owner_only(url: str) -> None:
    """Make an SQLite store owner-only, saying so when it was not (``store_modes``)."""
    changes = owner_only_sqlite(url)
    if changes:
        _log.warning(
            "made the audit store owner-only (it holds collection keys): %s",
            ", ".join(str(c) for c in changes),
        )
