"""Receipts keep their Merkle branch once: in ``merkle_branch``, a digest of it in ``raw``.

Revision ID: 0006_receipt_branch_once
Revises: 0005_member_paths_recomputed
Create Date: 2026-11-28

Each receipt row held its branch twice, in its ``merkle_branch`` column and inside the
node's receipt object in ``raw`` (~4 KB of JSON each, per entry). ``raw`` now holds
``{"sha256": digest}`` in place of the branch, and the branch is put back from the column
when read, if it has that digest (``connectors.receipt_raw``). No column changes.

Upgrading rewrites the ``raw`` of existing rows that way (rows read either way, so a
database stopped half-way is still right); downgrading puts each row's branch back in
``raw`` from its column, where the digest matches (a row whose column no longer matches
keeps the digest: the older code's report then flags it, as it flagged a difference).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0006_receipt_branch_once"
down_revision: str | None = "0005_member_paths_recomputed"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Rows read and rewritten per statement.
_CHUNK = 1000


def upgrade() -> None:
    from connectors.receipt_raw import stored_raw

    _rewrite(op.get_bind(), lambda raw, _branch: stored_raw(raw))


def downgrade() -> None:
    from connectors.receipt_raw import received_raw

    _rewrite(op.get_bind(), received_raw)


def _rewrite(
    conn: sa.Connection,
    change: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], dict[str, Any]],
) -> None:
    """Apply ``change(raw, merkle_branch)`` to every receipt row, by chunks of ids; rows it
    leaves equal are not written."""
    update = sa.text("UPDATE receipts SET raw = :raw WHERE id = :i")
    if conn.dialect.name == "postgresql":
        update = sa.text("UPDATE receipts SET raw = CAST(:raw AS JSONB) WHERE id = :i")
    query = sa.text(
        "SELECT id, raw, merkle_branch FROM receipts WHERE id > :after ORDER BY id LIMIT :n"
    )
    after = 0
    while True:
        rows = conn.execute(query, {"after": after, "n": _CHUNK}).all()
        if not rows:
            return
        params = []
        for row_id, raw, branch in rows:
            raw, branch = _json(raw), _json(branch)
            changed = change(raw, branch)
            if changed != raw:
                params.append({"i": row_id, "raw": json.dumps(changed)})
        if params:
            conn.execute(update, params)
        after = rows[-1][0]


def _json(value: Any) -> Any:
    """A JSON column's value: parsed already (PostgreSQL JSONB) or JSON text (SQLite)."""
    return json.loads(value) if isinstance(value, str | bytes) else value
