"""Runs say where they run and that they are alive: ``host``, ``pid``, ``heartbeat_at``.

Revision ID: 0007_run_heartbeat
Revises: 0006_receipt_branch_once
Create Date: 2026-12-02

A run killed (``kill -9``, a machine lost) stayed ``running`` for ever. A run now records
the host and process id that run it and renews ``heartbeat_at`` while it runs; the next
run or ``collect`` marks ``crashed`` a run whose process is gone or whose heartbeat is
stale (``connectors.audit.runs``). Three nullable columns: rows from before keep NULL
(such a run, still ``running``, is closed once it is older than the stale limit).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_run_heartbeat"
down_revision: str | None = "0006_receipt_branch_once"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A database made by ``create_all`` from these models (stamped at an older revision:
    # ``connectors.migrations``) has the columns already.
    present = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("runs")}
    columns = (
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
    )
    for column in columns:
        if column.name not in present:
            op.add_column("runs", column)


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("heartbeat_at")
        batch.drop_column("pid")
        batch.drop_column("host")
