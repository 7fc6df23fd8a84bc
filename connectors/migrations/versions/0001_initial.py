"""Initial audit schema: documents, notarizations, stage_events, receipts, runs.

Revision ID: 0001_initial
Revises:
Create Date: 2025-01-01

Identical to what ``AUDIT_METADATA.create_all`` made before migrations existed, so such a
database is stamped at this revision (``connectors.migrations``) instead of re-created.
Frozen: later schema changes are new revisions, never edits here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _utc(name: str, *, nullable: bool) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=1024), nullable=False),
        sa.Column("path", sa.String(length=4096), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        _utc("first_seen_at", nullable=False),
        _utc("last_seen_at", nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("source", "path", "sha256", name="uq_documents_source_path_sha256"),
    )
    op.create_index("ix_documents_sha256", "documents", ["sha256"])
    op.create_index("ix_documents_source", "documents", ["source"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("flow", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        _utc("started_at", nullable=False),
        _utc("finished_at", nullable=True),
        sa.Column("parameters", _JSON, nullable=True),
        sa.Column("counts", _JSON, nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_runs_flow", "runs", ["flow"])
    _create_notarizations()
    _create_receipts()
    op.create_table(
        "stage_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("notarization_id", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        _utc("at", nullable=False),
        sa.Column("details", _JSON, nullable=True),
        sa.ForeignKeyConstraint(["notarization_id"], ["notarizations.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_stage_events_notarization_id", "stage_events", ["notarization_id"])


def _create_notarizations() -> None:
    op.create_table(
        "notarizations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("collection", sa.String(length=255), nullable=False),
        sa.Column("chain_id", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("entry_hash", sa.String(length=64), nullable=True),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _utc("created_at", nullable=False),
        _utc("updated_at", nullable=False),
        _utc("published_at", nullable=True),
        _utc("multi_az_at", nullable=True),
        _utc("ledger_at", nullable=True),
        _utc("anchored_at", nullable=True),
        sa.Column("dblock_height", sa.Integer(), nullable=True),
        sa.Column("dblock_keymr", sa.String(length=64), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("chain_id", "sha256", name="uq_notarizations_chain_sha256"),
    )
    op.create_index("ix_notarizations_entry_hash", "notarizations", ["entry_hash"])
    op.create_index("ix_notarizations_dblock_height", "notarizations", ["dblock_height"])
    op.create_index("ix_notarizations_document_id", "notarizations", ["document_id"])
    op.create_index("ix_notarizations_stage_collection", "notarizations", ["stage", "collection"])


def _create_receipts() -> None:
    op.create_table(
        "receipts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("notarization_id", sa.Integer(), nullable=False),
        sa.Column("entry_hash", sa.String(length=64), nullable=False),
        sa.Column("merkle_branch", _JSON, nullable=False),
        sa.Column("entry_block_keymr", sa.String(length=64), nullable=False),
        sa.Column("directory_block_keymr", sa.String(length=64), nullable=False),
        sa.Column("directory_block_height", sa.Integer(), nullable=False),
        sa.Column("raw", _JSON, nullable=False),
        _utc("verified_at", nullable=False),
        sa.ForeignKeyConstraint(["notarization_id"], ["notarizations.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("notarization_id", name="uq_receipts_notarization"),
    )
    op.create_index("ix_receipts_entry_hash", "receipts", ["entry_hash"])


def downgrade() -> None:
    op.drop_table("stage_events")
    op.drop_table("receipts")
    op.drop_table("notarizations")
    op.drop_table("runs")
    op.drop_table("documents")
