"""Anchors table; CHECK constraint on notarizations.stage.

Revision ID: 0002_anchors
Revises: 0001_initial
Create Date: 2025-01-02

The stage constraint is an alter of an existing table: on SQLite it runs in batch mode
(the table is copied; ``connectors.migrations`` turns foreign keys off around it and
checks them before committing), on PostgreSQL it is a plain ``ALTER TABLE``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002_anchors"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_STAGES = ("pending", "published", "multi_az", "ledger", "anchor", "failed")
_STAGE_CHECK = "stage IN (" + ", ".join(f"'{s}'" for s in _STAGES) + ")"


def upgrade() -> None:
    op.create_table(
        "anchors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("notarization_id", sa.Integer(), nullable=False),
        sa.Column("dblock_height", sa.Integer(), nullable=False),
        sa.Column("dblock_keymr", sa.String(length=64), nullable=False),
        sa.Column("anchor_block_hash", sa.String(length=64), nullable=False),
        sa.Column("transaction_id", sa.String(length=64), nullable=False),
        sa.Column("confirmations", sa.Integer(), nullable=False),
        sa.Column("raw", _JSON, nullable=False),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["notarization_id"], ["notarizations.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("notarization_id", name="uq_anchors_notarization"),
    )
    op.create_index("ix_anchors_dblock_height", "anchors", ["dblock_height"])
    op.create_index("ix_anchors_transaction_id", "anchors", ["transaction_id"])
    with op.batch_alter_table("notarizations") as batch:
        batch.create_check_constraint("ck_notarizations_stage", sa.text(_STAGE_CHECK))


def downgrade() -> None:
    with op.batch_alter_table("notarizations") as batch:
        batch.drop_constraint("ck_notarizations_stage", type_="check")
    op.drop_index("ix_anchors_transaction_id", table_name="anchors")
    op.drop_index("ix_anchors_dblock_height", table_name="anchors")
    op.drop_table("anchors")
