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
    runs           one row per flow run, with its counts
    table_watermarks  where each table source stopped reading (``WatermarkStore``)

The schema is created and upgraded by the Alembic migrations in ``connectors/migrations``
(``AuditStore`` runs them when it opens); a change here needs a new revision there.

Below the tables: the frozen value records that ``AuditStore`` takes and returns.

Conventions: hashes and key Merkle roots are lowercase hex strings (64 chars); times are
timezone-aware UTC ``datetime`` values; JSON columns are JSONB on PostgreSQL, except those
of ``table_watermarks``, plain JSON as the table had before migrations managed it (so an
existing one needs no rewrite).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

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

Stage = Literal["pending", "published", "multi_az", "ledger", "anchor", "failed"]

# Stages in the order a notarization moves through them; "failed" stands outside.
STAGE_ORDER: tuple[Stage, ...] = ("pending", "published", "multi_az", "ledger", "anchor")
ALL_STAGES: tuple[Stage, ...] = (*STAGE_ORDER, "failed")

RunStatus = Literal["running", "completed", "failed"]

#: How a collection publishes (``docs/formats.md``): ``aggregate`` one entry per batch of
#: documents (their commitments in a Merkle tree), ``entry`` one commitment entry per
#: document, ``clear`` one version-1 entry per document with its path, size and SHA-256.
PublishMode = Literal["aggregate", "entry", "clear"]
PUBLISH_MODES: tuple[PublishMode, ...] = ("aggregate", "entry", "clear")

#: What a notarization row publishes: a version-1 document entry, a version-2 commitment
#: entry (one document), or a version-2 batch entry (the root of an aggregation tree).
NotarizationKind = Literal["document", "commitment", "batch"]

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
    when read (``connectors.audit_paths``); stored only for a batch that lost leaves to
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


# -- values passed in and out --------------------------------------------------------------


@dataclass(frozen=True)
class DocumentIn:
    """A document seen by a source: relative path (or row key), hex SHA-256, size in bytes."""

    path: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class NewNotarization:
    """A document hash to notarize in ``chain_id`` (hex) for ``collection``, as one entry of
    ``kind`` ``"document"`` (version 1, clear) or ``"commitment"`` (version 2)."""

    document_id: int
    collection: str
    chain_id: str
    sha256: str
    kind: NotarizationKind = "document"


@dataclass(frozen=True)
class NewMember:
    """A document of a batch: its id, hex SHA-256 and leaf index (its audit path is the
    store's to derive, ``connectors.audit_paths``)."""

    document_id: int
    sha256: str
    leaf_index: int


@dataclass(frozen=True)
class CollectionRecord:
    """A collection as the audit store keeps it (``key`` is secret: left out of ``repr``).

    Attributes:
        name: the collection's name (never published for a private mode).
        identifier: its 16-byte public identifier (names a private collection's chain).
        key: its 32-byte secret key.
        mode: how it publishes.
        chain_id: hex chain id of its chain.
        created_at: when it was registered.
    """

    name: str
    identifier: bytes
    key: bytes = field(repr=False)
    mode: PublishMode
    chain_id: str
    created_at: datetime

    @property
    def private(self) -> bool:
        """True unless the collection publishes clear-text version-1 entries."""
        return self.mode != "clear"


@dataclass(frozen=True)
class BatchRecord:
    """A batch notarization: its tree root and size, entry and stage.

    Attributes:
        id: the batch's notarization id.
        collection, chain_id: where it is published.
        root: hex root of its aggregation tree (the row's ``sha256``).
        size: leaves of the tree.
        members: documents recorded as its members (fewer than ``size`` when another
            worker aggregated some of its documents first).
        entry_hash, stage, dblock_height: as for any notarization.
    """

    id: int
    collection: str
    chain_id: str
    root: str
    size: int
    members: int
    entry_hash: str | None
    stage: Stage
    dblock_height: int | None


@dataclass(frozen=True)
class NotarizationRow:
    """A notarization joined with its document (``source``, ``path``, ``size_bytes``).

    For a batch row read to publish or sweep it, the document is the batch's pseudo
    document (``path`` and ``sha256`` are the root). A batch's member documents are read as
    rows of their own (``is_member``) by ``AuditStore.proofs`` and ``batch_members``.
    """

    id: int
    document_id: int
    collection: str
    chain_id: str
    sha256: str
    entry_hash: str | None
    stage: Stage
    attempts: int
    created_at: datetime
    updated_at: datetime
    published_at: datetime | None
    multi_az_at: datetime | None
    ledger_at: datetime | None
    anchored_at: datetime | None
    dblock_height: int | None
    dblock_keymr: str | None
    error: str | None
    source: str
    path: str
    size_bytes: int
    kind: NotarizationKind = "document"
    batch_size: int | None = None
    batch_root: str | None = None
    leaf_index: int | None = None
    audit_path: tuple[str, ...] = ()

    @property
    def is_member(self) -> bool:
        """True for a document of a batch: the row is its batch's notarization (id, stage,
        entry, times), with the document's ``document_id``, ``sha256``, ``path`` and
        ``size_bytes``, and ``batch_root``, ``leaf_index`` and ``audit_path`` set."""
        return self.leaf_index is not None


@dataclass(frozen=True)
class ReceiptRecord:
    """A receipt that the caller has verified (docs/formats.md §6), ready to store.

    Attributes:
        entry_hash: hex of the entry the receipt proves.
        merkle_branch: ``[{"left": hex, "right": hex, "top": hex}, ...]``.
        entry_block_keymr, directory_block_keymr: hex.
        directory_block_height: height of the directory block.
        raw: the node's receipt object as received.
        verified_at: when the caller verified it.
    """

    entry_hash: str
    merkle_branch: list[dict[str, str]]
    entry_block_keymr: str
    directory_block_keymr: str
    directory_block_height: int
    raw: dict[str, Any]
    verified_at: datetime

    @classmethod
    def from_node(cls, receipt: Mapping[str, Any], *, verified_at: datetime) -> ReceiptRecord:
        """Build from the node's ``receipt`` object (``NodeClient.receipts`` values).

        A missing ``directoryblockheight`` means 0 (factomd omits zero values).

        Raises:
            ValueError: a required field is missing or has the wrong type.
        """
        try:
            return cls(
                entry_hash=str(receipt["entry"]["entryhash"]),
                merkle_branch=[dict(node) for node in receipt["merklebranch"]],
                entry_block_keymr=str(receipt["entryblockkeymr"]),
                directory_block_keymr=str(receipt["directoryblockkeymr"]),
                directory_block_height=int(receipt.get("directoryblockheight", 0)),
                raw=dict(receipt),
                verified_at=verified_at,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a receipt object: {exc!r}") from exc


@dataclass(frozen=True)
class AnchorRecord:
    """An anchor of one directory block that the caller has verified, ready to store.

    Attributes:
        dblock_height: height of the anchored directory block.
        dblock_keymr: hex KeyMR of that directory block.
        anchor_block_hash: hex hash of the anchoring chain's block (``anchor_pow.blockhash``).
        transaction_id: hex id of the anchoring transaction (``anchor_pow.transactionhash``).
        confirmations: blocks of the anchoring chain on top of (and including) that block;
            0 when unknown.
        raw: the node's ``anchors`` result as received.
        verified_at: when the caller verified it.
    """

    dblock_height: int
    dblock_keymr: str
    anchor_block_hash: str
    transaction_id: str
    confirmations: int
    raw: dict[str, Any]
    verified_at: datetime

    @classmethod
    def from_node(
        cls,
        anchors: Mapping[str, Any],
        *,
        verified_at: datetime,
        confirmations: int | None = None,
    ) -> AnchorRecord:
        """Build from the node's ``anchors`` result (docs/formats.md §7.1).

        Reads ``directoryblockheight``, ``directoryblockkeymr`` and
        ``anchor_pow{transactionhash, blockhash}``; ``confirmations`` defaults to
        ``anchor_pow.confirmations`` when the node gives it, else 0.

        Raises:
            ValueError: a required field is missing, ``anchor_pow`` is absent/false, or a
                value has the wrong type.
        """
        try:
            pow_anchor = anchors["anchor_pow"]
            if not isinstance(pow_anchor, Mapping):
                raise TypeError(f"anchor_pow is {pow_anchor!r}")
            if confirmations is None:
                confirmations = int(pow_anchor.get("confirmations", 0))
            return cls(
                dblock_height=int(anchors.get("directoryblockheight", 0)),
                dblock_keymr=str(anchors["directoryblockkeymr"]),
                anchor_block_hash=str(pow_anchor["blockhash"]),
                transaction_id=str(pow_anchor["transactionhash"]),
                confirmations=int(confirmations),
                raw=dict(anchors),
                verified_at=verified_at,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an anchors result with anchor_pow: {exc!r}") from exc


@dataclass(frozen=True)
class ProofRecord:
    """A notarization and its stored receipt (``None`` until one is saved)."""

    notarization: NotarizationRow
    receipt: ReceiptRecord | None


@dataclass(frozen=True)
class StageEventRecord:
    """One ``stage_events`` row: a stage name, ``"error"`` for retryable errors."""

    stage: str
    at: datetime
    details: dict[str, Any] | None
