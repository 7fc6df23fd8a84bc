"""Members' audit paths recomputed, not stored; no index on documents' source or hash alone.

Revision ID: 0005_member_paths_recomputed
Revises: 0004_collections_batches
Create Date: 2026-11-28

At a million aggregated documents the audit database was about 2 GB, two thirds of it the
JSON audit path of each ``batch_members`` row, and its CPU per document grew with it.

- ``batch_members.audit_path`` becomes nullable: NULL for a batch holding all its leaves,
  recomputed from them when read (``connectors.audit.paths``). Existing paths stay (they
  are still right; reading them is cheaper than rebuilding).
- ``ix_documents_sha256`` and ``ix_documents_source`` are dropped: UNIQUE(source, path,
  sha256) serves every lookup by source, and no query looks documents up by hash alone.
  The hash index took a random page write per new document.

An unversioned database made by ``create_all`` from the current models already has this
shape and is stamped at 0004 (the tables and columns are the same): the steps are
therefore idempotent (an index is dropped only if present). On SQLite the nullability
change copies ``batch_members`` (batch mode). Downgrading fills the NULL paths (rebuilding
each batch's tree from the collection key and its members) and restores both indexes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005_member_paths_recomputed"
down_revision: str | None = "0004_collections_batches"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_DOCUMENT_INDEXES = (("ix_documents_sha256", "sha256"), ("ix_documents_source", "source"))


def upgrade() -> None:
    present = {ix["name"] for ix in sa.inspect(op.get_bind()).get_indexes("documents")}
    for name, _column in _DOCUMENT_INDEXES:
        if name in present:
            op.drop_index(name, table_name="documents")
    with op.batch_alter_table("batch_members") as batch:
        batch.alter_column("audit_path", existing_type=_JSON, nullable=True)


def downgrade() -> None:
    _fill_member_paths(op.get_bind())
    with op.batch_alter_table("batch_members") as batch:
        batch.alter_column("audit_path", existing_type=_JSON, nullable=False)
    for name, column in _DOCUMENT_INDEXES:
        op.create_index(name, "documents", [column])


def _fill_member_paths(conn: sa.Connection) -> None:
    # Imported here: only a downgrade needs the tree code.
    from connectors.audit.paths import batch_tree

    batches = conn.execute(
        sa.text(
            "SELECT DISTINCT m.batch_id, c.key FROM batch_members m "
            "JOIN notarizations n ON n.id = m.batch_id "
            "JOIN collections c ON c.name = n.collection WHERE m.audit_path IS NULL"
        )
    ).all()
    for batch_id, key in batches:
        members = conn.execute(
            sa.text("SELECT id, sha256 FROM batch_members WHERE batch_id = :b ORDER BY leaf_index"),
            {"b": batch_id},
        ).all()
        tree = batch_tree(bytes.fromhex(key), [sha for _id, sha in members])
        update = sa.text("UPDATE batch_members SET audit_path = :p WHERE id = :i")
        if conn.dialect.name == "postgresql":
            update = sa.text(
                "UPDATE batch_members SET audit_path = CAST(:p AS JSONB) WHERE id = :i"
            )
        params = [
            {"i": member_id, "p": json.dumps([h.hex() for h in tree.audit_path(index)])}
            for index, (member_id, _sha) in enumerate(members)
        ]
        conn.execute(update, params)
