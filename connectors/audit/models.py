"""Tables of the SQL audit store (SQLModel on SQLAlchemy 2), portable to SQLite and PostgreSQL.

The tables live in their own ``MetaData`` (``AuditBase.metadata``), never in SQLModel's
global one, so another service's models in the same process never end up in the audit
database (and Alembic can target exactly this metadata).

Tables::

    documents      one row per (source, path, sha256): a version of a document seen by a source
    collections    one row per collection: its secret key, public identifier, mode and chain
    notarizations  one row per published entry: a document hash (``kind`` "document" or
                   "commitment") or a batch's tree root (``kind`` "batch"); UNIQUE(chain_id, sha256)
    batch_members  the documents of a batch with their leaf index (and audit path, when
                   it cannot be recomputed from the batch's leaves);
                   UNIQUE(chain_id, sha256): a document is aggregated once per chain
    stage_events   append-only history of every stage change of a notarization
    receipts       verified receipts (Merkle branch entry hash -> directory block KeyMR)
    anchors        verified anchors of a notarization's directory block (anchor_pow)
    block_timestamps  the independent timestamps of a directory block as they arrive:
                   RFC 3161 tokens (TSA, genTime), the TSAs still waited for (with
                   their last error) and the OpenTimestamps state
    runs           one row per flow run, with its counts
    table_watermarks  where each table source stopped reading (``WatermarkStore``)

The schema is created and upgraded by the Alembic migrations in ``connectors/migrations``
(``AuditStore`` runs them when it opens); a change here needs a new revision there.

The frozen value records that ``AuditStore`` takes and returns, and the stage and mode
names, are in ``connectors.audit.records``.

Conventions: hashes and key Merkle roots are lowercase hex strings (64 chars); times are
timezone-aware UTC ``datetime`` values; JSON columns are JSONB on PostgreSQL, except those
of ``table_watermarks``, plain JSON as the table had before migrations managed it (so an
existing one needs no rewrite).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    String,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from connectors.audit.records import ALL_STAGES

_JSON = JSON().with_variant(JSONB(), "postgresql")
# Python None stored as SQL NULL (not JSON null): a member path to recompute.
_JSON_OR_NULL = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
_STAGE_CHECK = "stage IN (" + ", ".join(f"'{s}'" for s in ALL_STAGES) + ")"


def _utc_column(*, nullable: bool = True, index: bool = False) -> Any:
    return Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=nullable, index=index)
    )


class AuditBase(SQLModel, registry=registry()):
    """Base of the audit tables, with its own registry and metadata."""


class Document(AuditBase, table=True):
    """A document version: ``sha256`` of the bytes found at ``path`` in ``source``."""

    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("source", "path", "sha256", name="uq_documents_source_path_sha256"),
    )

    id: int | None = Field(default=None, primary_key=True)
    # No index of their own: UNIQUE(source, path, sha256) serves every lookup by source
    # (its prefix), and one on sha256 alone (random keys) cost a page write per document
    # at a million documents, for no query (migration 0005).
    source: str = Field(max_length=1024)  # "folder:/abs/path", "table:<name>"
    path: str = Field(max_length=4096)  # relative POSIX path, or a row key
    sha256: str = Field(max_length=64)  # hex
    size_bytes: int = Field(sa_column=Column(BigInteger, nullable=False))
    first_seen_at: datetime = _utc_column(nullable=False)
    last_seen_at: datetime = _utc_column(nullable=False)


class Notarization(AuditBase, table=True):
    """A document hash published (or to be published) as an entry of one chain."""

    __tablename__ = "notarizations"
    __table_args__ = (
        UniqueConstraint("chain_id", "sha256", name="uq_notarizations_chain_sha256"),
        Index("ix_notarizations_stage_collection", "stage", "collection"),
        CheckConstraint(_STAGE_CHECK, name="ck_notarizations_stage"),
    )

    id: int | None = Field(default=None, primary_key=True)
    document_id: int = Field(foreign_key="documents.id", index=True)
    collection: str = Field(max_length=255)
    chain_id: str = Field(max_length=64)  # hex
    # hex: a copy of documents.sha256 for the constraint; for a batch, its tree root (the
    # batch's pseudo document, source "batch:<collection>", has the same value)
    sha256: str = Field(max_length=64)
    kind: str = Field(
        default="document",
        sa_column=Column(String(16), nullable=False, server_default="document"),
    )  # NotarizationKind
    batch_size: int | None = Field(default=None)  # leaves of a batch's tree; None otherwise
    entry_hash: str | None = Field(default=None, max_length=64, index=True)  # hex
    stage: str = Field(default="pending", max_length=16)  # one of ALL_STAGES
    attempts: int = Field(default=0)  # failed attempts recorded by mark_failed
    created_at: datetime = _utc_column(nullable=False)
    updated_at: datetime = _utc_column(nullable=False)
    published_at: datetime | None = _utc_column()
    multi_az_at: datetime | None = _utc_column()
    ledger_at: datetime | None = _utc_column()
    anchored_at: datetime | None = _utc_column()
    dblock_height: int | None = Field(default=None, index=True)
    dblock_keymr: str | None = Field(default=None, max_length=64)  # hex
    error: str | None = Field(default=None)


class Collection(AuditBase, table=True):
    """A collection: its secret key, public identifier, publish mode and chain.

    ``key`` (32 random bytes, hex) is the secret every document's commitment nonce is
    derived from (``ledger.core.commitment``): never logged or published. ``identifier``
    (16 bytes, hex) names the chain of a private collection.
    """

    __tablename__ = "collections"

    name: str = Field(sa_column=Column(String(255), primary_key=True))
    identifier: str = Field(max_length=32)  # hex
    key: str = Field(max_length=64)  # hex, the collection secret
    mode: str = Field(max_length=16)  # PublishMode
    chain_id: str = Field(max_length=64)  # hex
    created_at: datetime = _utc_column(nullable=False)


class BatchMember(AuditBase, table=True):
    """A document aggregated in a batch: its leaf index and audit path in the batch's tree.

    ``audit_path`` is NULL when the batch holds all its leaves: it is recomputed from them
    when read (``connectors.audit.paths``); stored only for a batch that lost leaves to
    another worker's batch.
    """

    __tablename__ = "batch_members"
    __table_args__ = (UniqueConstraint("chain_id", "sha256", name="uq_batch_members_chain_sha256"),)

    id: int | None = Field(default=None, primary_key=True)
    batch_id: int = Field(foreign_key="notarizations.id", index=True)
    document_id: int = Field(foreign_key="documents.id", index=True)
    chain_id: str = Field(max_length=64)  # hex
    sha256: str = Field(max_length=64)  # hex, the document's hash
    leaf_index: int = Field(sa_column=Column(BigInteger, nullable=False))
    audit_path: list[str] | None = Field(  # hex, leaf first; NULL: recomputed
        default=None, sa_column=Column(_JSON_OR_NULL, nullable=True)
    )


class StageEvent(AuditBase, table=True):
    """One stage change of a notarization; rows are only ever inserted."""

    __tablename__ = "stage_events"

    id: int | None = Field(default=None, primary_key=True)
    notarization_id: int = Field(foreign_key="notarizations.id", index=True)
    stage: str = Field(max_length=16)
    at: datetime = _utc_column(nullable=False)
    details: dict[str, Any] | None = Field(default=None, sa_column=Column(_JSON))


class StoredReceipt(AuditBase, table=True):
    """A receipt that was verified locally before being stored (docs/formats.md §6)."""

    __tablename__ = "receipts"
    __table_args__ = (UniqueConstraint("notarization_id", name="uq_receipts_notarization"),)

    id: int | None = Field(default=None, primary_key=True)
    notarization_id: int = Field(foreign_key="notarizations.id")
    entry_hash: str = Field(max_length=64, index=True)
    merkle_branch: list[dict[str, str]] = Field(sa_column=Column(_JSON, nullable=False))
    entry_block_keymr: str = Field(max_length=64)
    directory_block_keymr: str = Field(max_length=64)
    directory_block_height: int
    raw: dict[str, Any] = Field(sa_column=Column(_JSON, nullable=False))  # the node's object
    verified_at: datetime = _utc_column(nullable=False)


class StoredAnchor(AuditBase, table=True):
    """An anchor of the directory block holding a notarization, verified before storing.

    One row per notarization (the anchor of its directory block, docs/formats.md §7.1
    ``anchor_pow``); ``confirmations`` and ``verified_at`` are refreshed when recorded again.
    """

    __tablename__ = "anchors"
    __table_args__ = (UniqueConstraint("notarization_id", name="uq_anchors_notarization"),)

    id: int | None = Field(default=None, primary_key=True)
    notarization_id: int = Field(foreign_key="notarizations.id")
    dblock_height: int = Field(index=True)
    dblock_keymr: str = Field(max_length=64)  # hex
    anchor_block_hash: str = Field(max_length=64)  # hex, block of the anchoring chain
    transaction_id: str = Field(max_length=64, index=True)  # hex, anchoring transaction
    confirmations: int = Field(default=0)
    raw: dict[str, Any] = Field(sa_column=Column(_JSON, nullable=False))  # the node's object
    verified_at: datetime = _utc_column(nullable=False)


class BlockTimestampRow(AuditBase, table=True):
    """The independent timestamps of one directory block's KeyMR, as the anchoring service
    last reported them (``anchor-timestamps``): one row per directory block, replaced when
    recorded again. ``rfc3161``: ``[{tsa, gentime, serial, subject}]`` of the tokens
    stored (each verified by the service); ``ots_state``: ``submitting``, ``pending`` or
    ``complete`` (NULL: no OpenTimestamps proof), ``ots_bitcoin_heights`` the Bitcoin
    blocks attested; ``final``: nothing more is waited for."""

    __tablename__ = "block_timestamps"

    dblock_height: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    dblock_keymr: str | None = Field(default=None, max_length=64)
    rfc3161: list[dict[str, Any]] = Field(sa_column=Column(_JSON, nullable=False))
    ots_state: str | None = Field(default=None, max_length=16)
    ots_bitcoin_heights: list[int] = Field(sa_column=Column(_JSON, nullable=False))
    final: bool = Field(default=False)
    recorded_at: datetime = _utc_column(nullable=False)
    tsa_waiting: list[dict[str, Any]] = Field(sa_column=Column(_JSON, nullable=False))


class Run(AuditBase, table=True):
    """One run of a flow, with the counts it reports when it finishes."""

    __tablename__ = "runs"

    id: int | None = Field(default=None, primary_key=True)
    flow: str = Field(max_length=255, index=True)
    status: str = Field(default="running", max_length=16)  # RunStatus
    started_at: datetime = _utc_column(nullable=False)
    finished_at: datetime | None = _utc_column()
    parameters: dict[str, Any] | None = Field(default=None, sa_column=Column(_JSON))
    counts: dict[str, Any] | None = Field(default=None, sa_column=Column(_JSON))
    host: str | None = Field(default=None, max_length=255)  # where it runs
    pid: int | None = Field(default=None)  # its process there
    heartbeat_at: datetime | None = _utc_column()  # renewed while it runs


class TableWatermark(AuditBase, table=True):
    """Where reading a table source stopped, per (source, collection): the position of the
    last row recorded (``connectors.table_source.Position.to_json()``) and for which
    watermark and key columns it holds."""

    __tablename__ = "table_watermarks"

    source: str = Field(sa_column=Column(String(1024), primary_key=True))
    collection: str = Field(sa_column=Column(String(255), primary_key=True))
    watermark_column: str = Field(max_length=255)
    key_columns: list[str] = Field(sa_column=Column(JSON, nullable=False))
    position: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    rows_read: int = Field(sa_column=Column(BigInteger, nullable=False))
    updated_at: datetime = _utc_column(nullable=False)


AUDIT_METADATA = AuditBase.metadata

__all__ = [
    "AUDIT_METADATA",
    "AuditBase",
    "BatchMember",
    "BlockTimestampRow",
    "Collection",
    "Document",
    "Notarization",
    "Run",
    "StageEvent",
    "StoredAnchor",
    "StoredReceipt",
    "TableWatermark",
]
