"""table_watermarks under migrations: where each table source stopped reading.

Revision ID: 0003_table_watermarks
Revises: 0002_anchors
Create Date: 2025-01-03

Before this revision ``WatermarkStore`` created the table itself (``create_all``) the first
time a table source ran, so an audit store at 0002 may already hold it, with rows: such a
table is adopted as it is (it has exactly these columns and types) after its columns are
checked; otherwise it is created. Downgrading drops it (and its positions: the next table
run then reads from the start, and known rows are skipped by hash).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from connectors.migrations import MigrationError

revision: str = "0003_table_watermarks"
down_revision: str | None = "0002_anchors"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "table_watermarks"
_COLUMNS = frozenset(
    {"source", "collection", "watermark_column", "key_columns", "position"}
    | {"rows_read", "updated_at"}
)


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if inspector.has_table(_TABLE):
        missing = _COLUMNS - {c["name"] for c in inspector.get_columns(_TABLE)}
        if missing:
            raise MigrationError(
                f"table {_TABLE!r} lacks columns {sorted(missing)}; refusing to adopt it",
                table=_TABLE,
                missing=frozenset(missing),
            )
        return
    op.create_table(
        _TABLE,
        sa.Column("source", sa.String(length=1024), nullable=False),
        sa.Column("collection", sa.String(length=255), nullable=False),
        sa.Column("watermark_column", sa.String(length=255), nullable=False),
        sa.Column("key_columns", sa.JSON(), nullable=False),
        sa.Column("position", sa.JSON(), nullable=False),
        sa.Column("rows_read", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("source", "collection"),
    )


def downgrade() -> None:
    op.drop_table(_TABLE)
