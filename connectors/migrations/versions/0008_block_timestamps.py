"""The independent timestamps of each directory block: ``block_timestamps``.

Revision ID: 0008_block_timestamps
Revises: 0007_run_heartbeat
Create Date: 2026-12-02

One row per directory block, written by the ``collect`` sweep from the anchoring
service's ``anchor-timestamps``: the RFC 3161 tokens stored (TSA, genTime, serial,
subject), the TSAs still waited for with their last error, and the OpenTimestamps state
and attested Bitcoin heights, for the report. A new
table: nothing existing changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008_block_timestamps"
down_revision: str | None = "0007_run_heartbeat"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    # A database made by ``create_all`` from these models (stamped at an older revision:
    # ``connectors.migrations``) has the table already.
    if "block_timestamps" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "block_timestamps",
        sa.Column("dblock_height", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("dblock_keymr", sa.String(length=64), nullable=True),
        sa.Column("rfc3161", _JSON, nullable=False),
        sa.Column("ots_state", sa.String(length=16), nullable=True),
        sa.Column("ots_bitcoin_heights", _JSON, nullable=False),
        sa.Column("final", sa.Boolean(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tsa_waiting", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("dblock_height"),
    )


def downgrade() -> None:
    op.drop_table("block_timestamps")
