"""Alembic migrations of the audit store, run programmatically (``AuditStore`` on open).

Revisions (``versions/``)::

    0001_initial   documents, notarizations, stage_events, receipts, runs
                   (exactly what ``create_all`` made before migrations existed)
    0002_anchors   anchors table; CHECK constraint on notarizations.stage (batch alter)
    0003_table_watermarks  table_watermarks (adopted as it is when ``WatermarkStore`` had
                   already made it, before migrations managed it)
    0004_collections_batches  collections, batch_members; notarizations.kind, batch_size
    0005_member_paths_recomputed  batch_members.audit_path nullable (recomputed); no
                   index on documents.sha256 or documents.source alone
    0006_receipt_branch_once  receipts.raw keeps a digest of the Merkle branch, which is
                   stored once, in receipts.merkle_branch (data only)
    0007_run_heartbeat  runs.host, runs.pid, runs.heartbeat_at (crashed runs are closed)
    0008_block_timestamps  block_timestamps: RFC 3161 tokens and OpenTimestamps state of
                   each directory block, as they arrive

``upgrade(engine)`` brings a database to the head revision:

1. fast path: the database is already at head (one read, no lock);
2. a lock for the rest (PostgreSQL: a transaction advisory lock per schema; SQLite:
   ``BEGIN IMMEDIATE``), so concurrent openers migrate once;
3. a database with audit tables but no version table (``VERSION_TABLE``; made by ``create_all`` before
   migrations existed) is checked table by table and column by column, then stamped at the
   newest revision whose tables it has (``MigrationError`` when it does not match);
4. the pending revisions run in the same transaction, committed at the end (PostgreSQL
   and SQLite both have transactional DDL, so a failure leaves the database unchanged).

On SQLite foreign keys are off while migrating (batch alters copy tables) and
``PRAGMA foreign_key_check`` must come back empty before the commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

from connectors.errors import ConnectorPackageError

__all__ = [
    "ANCHORS_REVISION",
    "BATCHES_REVISION",
    "HEAD_REVISION",
    "WATERMARKS_REVISION",
    "INITIAL_REVISION",
    "MEMBER_PATHS_REVISION",
    "VERSION_TABLE",
    "MigrationError",
    "alembic_config",
    "current_revision",
    "detect_unversioned_revision",
    "downgrade",
    "upgrade",
]

INITIAL_REVISION = "0001_initial"
ANCHORS_REVISION = "0002_anchors"
WATERMARKS_REVISION = "0003_table_watermarks"
BATCHES_REVISION = "0004_collections_batches"
MEMBER_PATHS_REVISION = "0005_member_paths_recomputed"
HEAD_REVISION = "0008_block_timestamps"
# Own name, not ``alembic_version``: the audit tables may share a database (or schema) with
# another service's Alembic-managed tables.
VERSION_TABLE = "audit_alembic_version"
_SCRIPT_LOCATION = Path(__file__).resolve().parent

# Tables (and their columns) that each revision adds, to recognise unversioned databases.
_TABLES_BY_REVISION: tuple[tuple[str, dict[str, frozenset[str]]], ...] = (
    (
        INITIAL_REVISION,
        {
            "documents": frozenset(
                {"id", "source", "path", "sha256", "size_bytes", "first_seen_at", "last_seen_at"}
            ),
            "notarizations": frozenset(
                {"id", "document_id", "collection", "chain_id", "sha256", "entry_hash", "stage"}
                | {"attempts", "created_at", "updated_at", "published_at", "multi_az_at"}
                | {"ledger_at", "anchored_at", "dblock_height", "dblock_keymr", "error"}
            ),
            "stage_events": frozenset({"id", "notarization_id", "stage", "at", "details"}),
            "receipts": frozenset(
                {"id", "notarization_id", "entry_hash", "merkle_branch", "entry_block_keymr"}
                | {"directory_block_keymr", "directory_block_height", "raw", "verified_at"}
            ),
            "runs": frozenset(
                {"id", "flow", "status", "started_at", "finished_at", "parameters", "counts"}
            ),
        },
    ),
    (
        ANCHORS_REVISION,
        {
            "anchors": frozenset(
                {"id", "notarization_id", "dblock_height", "dblock_keymr", "anchor_block_hash"}
                | {"transaction_id", "confirmations", "raw", "verified_at"}
            ),
        },
    ),
    (
        WATERMARKS_REVISION,
        {
            "table_watermarks": frozenset(
                {"source", "collection", "watermark_column", "key_columns", "position"}
                | {"rows_read", "updated_at"}
            ),
        },
    ),
    (
        BATCHES_REVISION,
        {
            "collections": frozenset(
                {"name", "identifier", "key", "mode", "chain_id", "created_at"}
            ),
            "batch_members": frozenset(
                {"id", "batch_id", "document_id", "chain_id", "sha256", "leaf_index"}
                | {"audit_path"}
            ),
        },
    ),
)


class MigrationError(ConnectorPackageError, RuntimeError):
    """The database holds tables that are not a recognisable audit store.

    Attributes:
        table: the table that did not match (``None`` when the set of tables is wrong).
        missing: the expected tables or columns that are absent.
    """

    def __init__(self, message: str, *, table: str | None, missing: frozenset[str]) -> None:
        super().__init__(message)
        self.table = table
        self.missing = missing


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for the audit migrations; ``connection`` is used by ``env.py``."""
    config = Config()
    config.set_main_option("script_location", str(_SCRIPT_LOCATION))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def current_revision(engine: Engine) -> str | None:
    """The revision recorded in ``VERSION_TABLE``; ``None`` for an unversioned database."""
    with engine.connect() as conn:
        return _context(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Bring the database to ``revision`` (stamping a ``create_all``-made one first).

    Returns:
        the revision the database is at afterwards.

    Raises:
        MigrationError: audit tables that do not match any revision, or foreign key
            violations after a SQLite migration.
    """
    if revision in ("head", HEAD_REVISION) and current_revision(engine) == HEAD_REVISION:
        return HEAD_REVISION

    def run(conn: Connection) -> None:
        if _context(conn).get_current_revision() is None:
            found = detect_unversioned_revision(conn)
            if found is not None:
                command.stamp(alembic_config(conn), found)
        command.upgrade(alembic_config(conn), revision)

    _locked(engine, run)
    return current_revision(engine)


def downgrade(engine: Engine, revision: str) -> str | None:
    """Step the database back to ``revision`` (``"base"`` drops every audit table)."""
    _locked(engine, lambda conn: command.downgrade(alembic_config(conn), revision))
    return current_revision(engine)


def _context(conn: Connection) -> MigrationContext:
    return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})


def detect_unversioned_revision(conn: Connection) -> str | None:
    """The newest revision whose tables an unversioned database holds, or ``None`` if empty.

    Raises:
        MigrationError: some but not all tables of a revision exist, or one lacks columns.
    """
    inspector = inspect(conn)
    present = set(inspector.get_table_names())
    found: str | None = None
    for revision, tables in _TABLES_BY_REVISION:
        have = present & set(tables)
        if not have:
            break
        if have != set(tables):
            missing = frozenset(set(tables) - have)
            raise MigrationError(
                f"unversioned database has audit tables {sorted(have)} but not "
                f"{sorted(missing)}; not an audit store this program can upgrade",
                table=None,
                missing=missing,
            )
        for table, columns in tables.items():
            _check_columns(table, columns, {c["name"] for c in inspector.get_columns(table)})
        found = revision
    return found


def _check_columns(table: str, expected: frozenset[str], actual: set[str]) -> None:
    missing = frozenset(expected - actual)
    if missing:
        raise MigrationError(
            f"table {table!r} lacks columns {sorted(missing)}; refusing to stamp it",
            table=table,
            missing=missing,
        )


def _locked(engine: Engine, work: Callable[[Connection], None]) -> None:
    """Run ``work`` in one transaction holding the migration lock, then commit."""
    with engine.connect() as conn, _migration_transaction(conn):
        work(conn)


@contextmanager
def _migration_transaction(conn: Connection) -> Iterator[None]:
    if conn.dialect.name == "sqlite":
        with _sqlite_transaction(conn):
            yield
        return
    conn.execute(
        text(
            "SELECT pg_advisory_xact_lock(hashtext('notary-audit-migrations:' || current_schema()))"
        )
    )
    yield
    conn.commit()


@contextmanager
def _sqlite_transaction(conn: Connection) -> Iterator[None]:
    conn.exec_driver_sql("PRAGMA foreign_keys=OFF")  # outside a transaction, or ignored
    try:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        yield
        violations = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if violations:
            conn.rollback()
            tables = frozenset(str(v[0]) for v in violations)
            raise MigrationError(
                f"migration left foreign key violations in {sorted(tables)}",
                table=None,
                missing=tables,
            )
        conn.commit()
    finally:
        if conn.in_transaction():
            conn.rollback()
        conn.exec_driver_sql("PRAGMA foreign_keys=ON")
        conn.commit()
