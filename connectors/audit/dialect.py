"""Set-based writes of the audit store's two per-document inserts: documents and batch members.

A folder run writes one ``documents`` row per file and, in ``aggregate`` mode, one
``batch_members`` row per file, so these two statements carry the pipeline's per-document
database cost. Sent the usual way (``executemany`` of parameter dicts) SQLAlchemy processes
every value in Python (a datetime formatted, a JSON audit path encoded, per row): about
60 % of the audit store's CPU at 300,000 files, more than SQLite's own work. On SQLite the
rows go instead as one JSON array per statement, unpacked by SQLite itself
(``INSERT ... SELECT ... FROM json_each(:rows)``): one ``json.dumps`` in C for the page,
the same rows, the same ``ON CONFLICT`` rules, the same ``RETURNING``.

PostgreSQL keeps the executemany statements of ``audit_sql.Statements`` (its driver
pipelines them; this was measured on SQLite only).

Both functions run on a connection whose transaction the caller owns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.engine import Connection, Row

from connectors.audit.sql import Statements, chunks, documents_table, members_table

__all__ = [
    "MEMBERS_PER_INSERT",
    "insert_members",
    "known_chain_hashes",
    "member_ids",
    "store_audit_paths",
    "upsert_document_rows",
]

#: Members per statement: a 10,000-member batch in one statement cost ~20 MB of
#: parameters (executemany) or ~11 MB of JSON text; pages of 1,000 bound that.
MEMBERS_PER_INSERT = 1000

_UPSERT_DOCUMENTS_SQLITE = text(
    "INSERT INTO documents (source, path, sha256, size_bytes, first_seen_at, last_seen_at) "
    "SELECT :source, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), "
    "json_extract(j.value, '$[2]'), :now, :now FROM json_each(:rows) AS j "
    # SQLite needs a WHERE before an upsert's ON CONFLICT after INSERT ... SELECT (parsing).
    "WHERE true "
    "ON CONFLICT (source, path, sha256) DO UPDATE SET "
    "last_seen_at = excluded.last_seen_at, size_bytes = excluded.size_bytes "
    "RETURNING id, path, sha256"
).bindparams(bindparam("now", type_=documents_table.c.last_seen_at.type))

# ``audit_path`` is left NULL: recomputed from the batch's leaves (``connectors.audit.paths``).
# No RETURNING: the cursor's row count says how many were inserted, and the member ids are
# read back only for a batch that lost leaves (``member_ids``), rare, instead of fetching
# 10,000 rows per batch.
_INSERT_MEMBERS_SQLITE = text(
    "INSERT INTO batch_members (batch_id, document_id, chain_id, sha256, leaf_index) "
    "SELECT :batch_id, json_extract(j.value, '$[0]'), :chain_id, json_extract(j.value, '$[1]'), "
    "json_extract(j.value, '$[2]') FROM json_each(:rows) AS j "
    "WHERE true "
    "ON CONFLICT (chain_id, sha256) DO NOTHING"
)

# One statement for a window's hashes (each looked up in the two unique (chain_id, sha256)
# indexes), instead of two IN (...) queries per 500 hashes whose expanding parameters
# SQLAlchemy processes one by one.
_KNOWN_HASHES_SQLITE = text(
    "SELECT j.value AS sha256 FROM json_each(:hashes) AS j WHERE "
    "EXISTS (SELECT 1 FROM batch_members AS m "
    "WHERE m.chain_id = :chain_id AND m.sha256 = j.value) "
    "OR EXISTS (SELECT 1 FROM notarizations AS n "
    "WHERE n.chain_id = :chain_id AND n.sha256 = j.value AND n.kind != 'batch')"
)

#: Hashes per known-hashes statement (about 66 bytes of JSON each).
HASHES_PER_LOOKUP = 10_000


def upsert_document_rows(
    conn: Connection,
    statements: Statements,
    *,
    source: str,
    rows: Sequence[tuple[str, str, int]],
    now: datetime,
) -> list[Row[Any]]:
    """Insert or refresh ``documents`` rows ``(path, lowercase hex sha256, size bytes)`` of
    ``source`` seen at ``now`` (``first_seen_at`` kept for a known row; ``last_seen_at``
    and ``size_bytes`` updated). ``rows`` must be distinct by (path, sha256).

    Returns:
        one row ``(id, path, sha256)`` per input row, inserted or updated, in no set order.
    """
    if not rows:
        return []
    if conn.dialect.name == "sqlite":
        params = {"source": source, "now": now, "rows": _json(rows)}
        return list(conn.execute(_UPSERT_DOCUMENTS_SQLITE, params))
    values = [
        {"source": source, "path": p, "sha256": h, "size_bytes": size}
        | {"first_seen_at": now, "last_seen_at": now}
        for p, h, size in rows
    ]
    return list(conn.execute(statements.upsert_documents, values))


def insert_members(
    conn: Connection,
    statements: Statements,
    *,
    batch_id: int,
    chain_id: str,
    rows: Sequence[tuple[int, str, int]],
) -> int:
    """Insert ``batch_members`` rows ``(document id, lowercase hex sha256, leaf index)`` of
    one batch, without audit path (NULL), in pages of ``MEMBERS_PER_INSERT``; a hash the
    chain has a member for already is left out (``ON CONFLICT DO NOTHING``).

    Returns:
        how many rows were inserted (the batch's own members; ``member_ids`` reads them).
    """
    inserted = 0
    for page in chunks(rows, MEMBERS_PER_INSERT):
        if conn.dialect.name == "sqlite":
            params = {"batch_id": batch_id, "chain_id": chain_id, "rows": _json(page)}
            inserted += conn.execute(_INSERT_MEMBERS_SQLITE, params).rowcount
        else:
            values = [
                {"batch_id": batch_id, "document_id": doc_id, "chain_id": chain_id}
                | {"sha256": sha, "leaf_index": index}
                for doc_id, sha, index in page
            ]
            inserted += len(conn.execute(statements.add_members, values).all())
    return inserted


def member_ids(conn: Connection, batch_id: int) -> dict[int, int]:
    """Leaf index -> member id of the ``batch_members`` rows of one batch."""
    m = members_table.c
    query = select(m.leaf_index, m.id).where(m.batch_id == batch_id)
    return {int(index): int(member_id) for index, member_id in conn.execute(query)}


def known_chain_hashes(conn: Connection, chain_id: str, sha256s: Sequence[str]) -> set[str]:
    """The hashes among ``sha256s`` (lowercase hex, distinct) that ``chain_id`` has a
    notarization of their own (not a batch's root) or a batch member for; SQLite only.

    Raises:
        ValueError: the connection is not to SQLite (``known_hashes`` has the portable query).
    """
    if conn.dialect.name != "sqlite":
        raise ValueError("known_chain_hashes is SQLite's statement")
    found: set[str] = set()
    for page in chunks(sha256s, HASHES_PER_LOOKUP):
        params = {"chain_id": chain_id, "hashes": _json(page)}
        found.update(conn.scalars(_KNOWN_HASHES_SQLITE, params))
    return found


def store_audit_paths(conn: Connection, paths: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Set ``batch_members.audit_path`` of members ``(member id, hex path leaf first)``: for
    a batch that cannot be rebuilt from its rows (``connectors.audit.paths``)."""
    if paths:
        m = members_table.c
        stmt = update(members_table).where(m.id == bindparam("m_id"))
        params = [{"m_id": i, "m_path": list(p)} for i, p in paths]
        conn.execute(stmt.values(audit_path=bindparam("m_path")), params)


def _json(rows: Sequence[Sequence[Any]]) -> str:
    # Paths are valid UTF-8 (sources refuse other names): sent as they are, not escaped.
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
