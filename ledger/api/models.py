"""Database tables of the publishing API (SQLAlchemy 2 declarative; SQLite and PostgreSQL).

Times are Unix seconds (float) from the injected clock. Hashes and chain IDs are stored as
64-character lowercase hex (they are looked up by the hex the REST layer receives);
external IDs are stored as the Base64 strings of the wire form, content as raw bytes.

Tables::

    accounts          API accounts; only the SHA-256 of each key is kept
    chains            one row per chain (owner, external IDs, entry counter)
    entries           the outbox and the record: one row per chain or entry write,
                      with its durability stage and its submission state
    external_id_tags  one row per external ID of an entry (SHA-256 of the value), for search
    callbacks         durable callback queue (one row per stage notification)
    service_state     small key/value facts of the worker (last followed block height, ...)
    write_failures    why and when a write was given up (one row per write at stage ``failed``)
"""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "Account",
    "Base",
    "CallbackRow",
    "CallbackStatus",
    "Chain",
    "EntryRow",
    "ExternalIdTag",
    "PUBLIC_STAGES",
    "ServiceState",
    "Stage",
    "SubmitState",
    "WriteFailure",
]

#: Integer primary keys: BIGINT on PostgreSQL, INTEGER (rowid alias) on SQLite.
_Id = BigInteger().with_variant(Integer(), "sqlite")


class Stage(enum.StrEnum):
    """Durability stage of a chain or entry (docs/rest-api.md §4 (States and transitions))."""

    ACCEPTED = "accepted"
    MULTI_AZ = "multi_az"
    LEDGER = "ledger"
    ANCHOR = "anchor"
    FAILED = "failed"  # given up: never on the ledger (``WriteFailure`` says why)


#: The stages answers show, and operation 7's ``stage`` filter takes (``accepted`` is the
#: instant before the commit that makes a write ``multi_az``; no answer shows it).
PUBLIC_STAGES: tuple[str, ...] = (
    Stage.MULTI_AZ.value,
    Stage.LEDGER.value,
    Stage.ANCHOR.value,
    Stage.FAILED.value,
)


class SubmitState(enum.StrEnum):
    """How far the worker got in handing a row to the ledger."""

    PENDING = "pending"  # not yet committed (or the commit's outcome is unknown)
    COMMITTED = "committed"  # commit accepted by the node (or answered -32011)
    REVEALED = "revealed"  # reveal accepted by the node
    FAILED = "failed"  # given up: refused for good, or too many errors (stage ``failed``)


class CallbackStatus(enum.StrEnum):
    """Delivery state of one queued callback."""

    PENDING = "pending"
    DELIVERED = "delivered"
    DROPPED = "dropped"  # gave up (time limit) or refused (private address)


class Base(DeclarativeBase):
    """Declarative base of the API's tables."""


class Account(Base):
    """An API account. ``key_hash`` is the SHA-256 hex of the UTF-8 key; the key is never stored."""

    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(_Id, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[float] = mapped_column(Double)
    revoked_at: Mapped[float | None] = mapped_column(Double, default=None)


class Chain(Base):
    """A chain owned by one account; its external IDs are those of its first entry."""

    __tablename__ = "chains"
    __table_args__ = (Index("ix_chains_account_created", "account_id", "created_at"),)

    chain_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    external_ids: Mapped[list[Any]] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Double)
    first_entry_hash: Mapped[str] = mapped_column(String(64))
    #: Number of entries (first entry included); the next entry gets ``seq = entry_count``.
    entry_count: Mapped[int] = mapped_column(Integer, default=0)


class EntryRow(Base):
    """One accepted write: the first entry of a chain (``is_first``) or a later entry."""

    __tablename__ = "entries"
    __table_args__ = (
        UniqueConstraint("chain_id", "seq", name="uq_entries_chain_seq"),
        Index("ix_entries_state_next", "state", "next_attempt_at"),
        Index("ix_entries_stage", "stage"),
    )

    id: Mapped[int] = mapped_column(_Id, primary_key=True, autoincrement=True)
    entry_hash: Mapped[str] = mapped_column(String(64), unique=True)
    chain_id: Mapped[str] = mapped_column(ForeignKey("chains.chain_id"))
    seq: Mapped[int] = mapped_column(Integer)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    is_first: Mapped[bool] = mapped_column(Boolean, default=False)
    external_ids: Mapped[list[Any]] = mapped_column(JSON)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    callback_url: Mapped[str | None] = mapped_column(Text, default=None)
    callback_stages: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    stage: Mapped[str] = mapped_column(String(16), default=Stage.ACCEPTED.value)
    state: Mapped[str] = mapped_column(String(16), default=SubmitState.PENDING.value)
    created_at: Mapped[float] = mapped_column(Double)
    multi_az_at: Mapped[float | None] = mapped_column(Double, default=None)
    ledger_at: Mapped[float | None] = mapped_column(Double, default=None)
    anchor_at: Mapped[float | None] = mapped_column(Double, default=None)
    dblock_keymr: Mapped[str | None] = mapped_column(String(64), default=None)
    dblock_height: Mapped[int | None] = mapped_column(BigInteger, default=None)
    anchor_block_hash: Mapped[str | None] = mapped_column(String(128), default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[float] = mapped_column(Double, default=0.0)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    #: The composed reveal call ``{"method", "params"}`` kept once the commit is accepted.
    reveal_call: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)


class ExternalIdTag(Base):
    """One external ID of one entry, by the SHA-256 hex of its raw bytes (search index)."""

    __tablename__ = "external_id_tags"
    __table_args__ = (
        Index("ix_tags_chain_value", "chain_id", "value_hash"),
        Index("ix_tags_account_value", "account_id", "value_hash", "is_first"),
    )

    id: Mapped[int] = mapped_column(_Id, primary_key=True, autoincrement=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("entries.id"))
    chain_id: Mapped[str] = mapped_column(String(64))
    account_id: Mapped[int] = mapped_column(BigInteger)
    is_first: Mapped[bool] = mapped_column(Boolean)
    value_hash: Mapped[str] = mapped_column(String(64))


class CallbackRow(Base):
    """A queued callback: POST ``{}`` to ``url`` (query string complete) until delivered."""

    __tablename__ = "callbacks"
    __table_args__ = (Index("ix_callbacks_status_next", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(_Id, primary_key=True, autoincrement=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("entries.id"))
    stage: Mapped[str] = mapped_column(String(16))
    url: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=CallbackStatus.PENDING.value)
    created_at: Mapped[float] = mapped_column(Double)
    next_attempt_at: Mapped[float] = mapped_column(Double)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    delivered_at: Mapped[float | None] = mapped_column(Double, default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)


class ServiceState(Base):
    """A named fact of the service kept across restarts (``last_height``, ``callback_secret``)."""

    __tablename__ = "service_state"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class WriteFailure(Base):
    """Why an accepted write was given up (its ``entries`` row is at stage ``failed``).

    A table of its own rather than columns of ``entries``, so that a database made before
    failures were recorded gains it from ``create_schema`` without altering a table.

    Attributes:
        reason: one line, as the read fields and the ``failed`` callback show it.
        failed_at: Unix seconds (the injected clock) when the write was given up.
        attempts: submissions answered with an error, the last one included.
        permanent: the node refused the write itself (it would refuse it again), as
            opposed to a write given up after ``submit_max_attempts`` transient errors or
            because its chain's first entry failed.
    """

    __tablename__ = "write_failures"

    entry_id: Mapped[int] = mapped_column(ForeignKey("entries.id"), primary_key=True)
    reason: Mapped[str] = mapped_column(Text)
    failed_at: Mapped[float] = mapped_column(Double)
    attempts: Mapped[int] = mapped_column(Integer)
    permanent: Mapped[bool] = mapped_column(Boolean)
