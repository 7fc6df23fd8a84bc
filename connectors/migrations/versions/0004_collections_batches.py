"""Collections (secret key, identifier, mode, chain), batches and their members.

Revision ID: 0004_collections_batches
Revises: 0003_table_watermarks
Create Date: 2025-01-04

Adds ``collections`` and ``batch_members``, and two columns to ``notarizations``: ``kind``
(``"document"`` for every existing row: they are version-1 clear entries) and
``batch_size``. New columns only, so no table is copied on SQLite. Downgrading drops them
with the batches' member lists; batch rows themselves stay (as notarizations of their
pseudo documents).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004_collections_batches"
down_revision: str | None = "0003_table_watermarks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "collections",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("identifier", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("chain_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.add_column(
        "notarizations",
        sa.Column("kind", sa.String(length=16), nullable=False, server_default="document"),
    )
    op.add_column("notarizations", sa.Column("batch_size", sa.Integer(), nullable=True))
    op.create_table(
        "batch_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("chain_id", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("leaf_index", sa.BigInteger(), nullable=False),
        sa.Column("audit_path", _JSON, nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["notarizations.id"]),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("chain_id", "sha256", name="uq_batch_members_chain_sha256"),
    )
    op.create_index("ix_batch_members_batch_id", "batch_members", ["batch_id"])
    op.create_index("ix_batch_members_document_id", "batch_members", ["document_id"])


def downgrade() -> None:
    op.drop_index("ix_batch_members_document_id", table_name="batch_members")
    op.drop_index("ix_batch_members_batch_id", table_name="batch_members")
    op.drop_table("batch_members")
    with op.batch_alter_table("notarizations") as batch:
        batch.drop_column("batch_size")
        batch.drop_column("kind")
    op.drop_table("collections")
