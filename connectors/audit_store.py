"""The SQL audit store: the pipeline's record of truth (documents, notarizations, receipts).

``AuditStore(url)`` works on SQLite (default; a file in WAL mode) and PostgreSQL
(``postgresql+psycopg://host:port/db``). Every public method is one transaction and takes
or returns a whole batch, so thousands of documents cost a handful of statements.

Stage life cycle of a notarization (``STAGE_ORDER``)::

    pending -> published -> multi_az -> ledger -> anchor          (forward only; skips allowed)
       any stage ----------------------------------> failed       (terminal, mark_failed)

Every stage change appends a ``stage_events`` row in the same transaction; a retryable
error appends an ``"error"`` event without changing the stage. A document hash is
notarized at most once per chain (UNIQUE(chain_id, sha256)); duplicates are ignored with
``INSERT ... ON CONFLICT DO NOTHING`` (SQLite >= 3.35 and PostgreSQL). Other SQL backends
are refused with ``ValueError``.

The anchor stage: ``awaiting_anchor`` / ``awaiting_anchor_blocks`` list what waits for it,
``record_anchors`` stores verified anchors (one per notarization, by directory block) and
moves ``ledger`` rows to ``anchor``.

``AuditStore`` is a facade over one part per concern, each its own module::

    audit_base.AuditStoreBase             engine, clock, the stage move (_advance)
    audit_notarizations.NotarizationsPart documents, notarizations, stages, events
    audit_batches.BatchesPart             batches of aggregated documents and their members
    audit_proofs.ProofsPart               receipts and anchors
    audit_collections.CollectionsPart     collections: secret key, identifier, mode, chain
    audit_runs.RunsPart                   flow runs, counts per stage
    audit_sql                             tables, batch statements, row conversions
    audit_models / audit_records          the table models / the value records and stage names

Hex values (sha256, entry hashes, key Merkle roots, chain ids) are 64-char strings and are
stored lowercase. Times are timezone-aware UTC ``datetime`` values from the injected clock.

The schema is managed by Alembic (``connectors.migrations``): opening a store upgrades the
database to the newest revision, stamping one made by ``create_all`` before migrations
existed (``MigrationError`` when existing tables do not match).
"""

from __future__ import annotations

import logging

from sqlalchemy import text

from connectors import migrations
from connectors.audit_batches import BATCH_SOURCE_PREFIX, batch_source
from connectors.audit_collections import ChainNamer, CollectionModeError, CollectionsPart
from connectors.audit_engine import build_engine
from connectors.audit_models import (
    ALL_STAGES,
    PUBLISH_MODES,
    STAGE_ORDER,
    AnchorRecord,
    BatchRecord,
    CollectionRecord,
    DocumentIn,
    NewMember,
    NewNotarization,
    NotarizationKind,
    NotarizationRow,
    ProofRecord,
    PublishMode,
    ReceiptRecord,
    RunStatus,
    Stage,
    StageEventRecord,
)
from connectors.audit_proofs import ProofsPart
from connectors.audit_runs import RunsPart
from connectors.migrations import MigrationError
from connectors.store_modes import owner_only_sqlite
from ledger.core.clock import Clock, SystemClock

_log = logging.getLogger(__name__)

__all__ = [
    "ALL_STAGES",
    "BATCH_SOURCE_PREFIX",
    "PUBLISH_MODES",
    "STAGE_ORDER",
    "AnchorRecord",
    "AuditStore",
    "BatchRecord",
    "ChainNamer",
    "CollectionModeError",
    "CollectionRecord",
    "DocumentIn",
    "MigrationError",
    "NewMember",
    "NewNotarization",
    "NotarizationKind",
    "NotarizationRow",
    "PublishMode",
    "ProofRecord",
    "ReceiptRecord",
    "RunStatus",
    "Stage",
    "StageEventRecord",
    "batch_source",
]


class AuditStore(ProofsPart, CollectionsPart, RunsPart):
    """Batch-oriented access to the audit tables (the parts: module docstring).

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
        super().__init__(engine, clock=clock or SystemClock())
        self._schema = schema
        if create_tables:
            self.create_tables()

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
