"""What differs per backend in the audit store's SQL, behind one seam: ``dialect_for(name)``.

Every repository writes through the ``Dialect`` of its engine: the batch ``INSERT``
statements (``ON CONFLICT`` upserts, built with the backend's own ``insert``) and the
three set-based paths that carry the pipeline's per-document database cost: documents,
batch members and the known-hashes lookup.

A folder run writes one ``documents`` row per file and, in ``aggregate`` mode, one
``batch_members`` row per file. Sent the usual way (``executemany`` of parameter dicts)
SQLAlchemy processes every value in Python (a datetime formatted, a JSON audit path
encoded, per row): about 60 % of the audit store's CPU at 300,000 files, more than
SQLite's own work. ``SqliteDialect`` sends the rows instead as one JSON array per
statement, unpacked by SQLite itself (``INSERT ... SELECT ... FROM json_each(:rows)``):
one ``json.dumps`` in C for the page, the same rows, the same ``ON CONFLICT`` rules, the
same ``RETURNING``. ``PostgresDialect`` keeps the executemany statements (its driver
pipelines them; the JSON path was measured on SQLite only).

Every method runs on a connection whose transaction the caller owns.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Row

from connectors.audit.sql import (
    ANCHOR_REFRESHED,
    IN_CHUNK,
    anchors_table,
    chunks,
    collections_table,
    documents_table,
    members_table,
    notarizations_table,
    receipts_table,
)

__all__ = [
    "MEMBERS_PER_INSERT",
    "Dialect",
    "PostgresDialect",
    "SqliteDialect",
    "Statements",
    "dialect_for",
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
# read back only for a batch that lost leaves (``Batches``), rare, instead of fetching
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


@dataclass(frozen=True)
class Statements:
    """The batch INSERTs, built once per dialect and run with a list of parameter dicts.

    Executed that way (executemany), SQLAlchemy compiles each statement once and sends the
    rows in pages ("insertmanyvalues", RETURNING included); a multi-row ``.values(rows)``
    statement is compiled anew for every batch, which cost ~10x the database's own time.
    """

    upsert_documents: Any
    add_notarizations: Any
    save_receipts: Any
    record_anchors: Any
    add_members: Any
    add_collection: Any


def _statements(dialect_insert: Any) -> Statements:
    """The batch INSERTs built with ``dialect_insert`` (``sqlite.insert`` or
    ``postgresql.insert``): upserts with ``ON CONFLICT`` on the tables' unique keys
    (SQLite >= 3.35, PostgreSQL)."""
    docs = dialect_insert(documents_table)
    notarizations = dialect_insert(notarizations_table)
    receipts = dialect_insert(receipts_table)
    anchors = dialect_insert(anchors_table)
    members = dialect_insert(members_table)
    collections = dialect_insert(collections_table)
    n = notarizations_table.c
    return Statements(
        upsert_documents=docs.on_conflict_do_update(
            index_elements=["source", "path", "sha256"],
            set_={
                "last_seen_at": docs.excluded.last_seen_at,
                "size_bytes": docs.excluded.size_bytes,
            },
        ).returning(documents_table.c.id, documents_table.c.path, documents_table.c.sha256),
        add_notarizations=notarizations.on_conflict_do_nothing(
            index_elements=["chain_id", "sha256"]
        ).returning(n.id, n.chain_id, n.sha256),
        save_receipts=receipts.on_conflict_do_nothing(index_elements=["notarization_id"]).returning(
            receipts_table.c.id
        ),
        record_anchors=anchors.on_conflict_do_update(
            index_elements=["notarization_id"],
            set_={k: anchors.excluded[k] for k in ANCHOR_REFRESHED},
        ),
        add_members=members.on_conflict_do_nothing(index_elements=["chain_id", "sha256"]).returning(
            members_table.c.id, members_table.c.leaf_index
        ),
        add_collection=collections.on_conflict_do_nothing(index_elements=["name"]),
    )


class Dialect:
    """The audit store's SQL on one backend: its statements and its bulk paths.

    The methods here are the portable forms (executemany, ``IN (...)`` lookups), the ones
    ``PostgresDialect`` runs; ``SqliteDialect`` replaces the bulk paths.

    Args:
        dialect_insert: the backend's ``insert`` construct (it has ``ON CONFLICT``).
    """

    #: The SQLAlchemy dialect name this serves.
    name = ""

    def __init__(self, dialect_insert: Any) -> None:
        self.statements = _statements(dialect_insert)

    def upsert_documents(
        self,
        conn: Connection,
        *,
        source: str,
        rows: Sequence[tuple[str, str, int]],
        now: datetime,
    ) -> list[Row[Any]]:
        """Insert or refresh ``documents`` rows ``(path, lowercase hex sha256, size bytes)``
        of ``source`` seen at ``now`` (``first_seen_at`` kept for a known row;
        ``last_seen_at`` and ``size_bytes`` updated). ``rows`` must be distinct by (path,
        sha256).

        Returns:
            one row ``(id, path, sha256)`` per input row, inserted or updated, in no set
            order.
        """
        return self._upsert_document_rows(conn, source, rows, now) if rows else []

    def _upsert_document_rows(
        self, conn: Connection, source: str, rows: Sequence[tuple[str, str, int]], now: datetime
    ) -> list[Row[Any]]:
        values = [
            {"source": source, "path": p, "sha256": h, "size_bytes": size}
            | {"first_seen_at": now, "last_seen_at": now}
            for p, h, size in rows
        ]
        return list(conn.execute(self.statements.upsert_documents, values))

    def insert_members(
        self,
        conn: Connection,
        *,
        batch_id: int,
        chain_id: str,
        rows: Sequence[tuple[int, str, int]],
    ) -> int:
        """Insert ``batch_members`` rows ``(document id, lowercase hex sha256, leaf index)``
        of one batch, without audit path (NULL), in pages of ``MEMBERS_PER_INSERT``; a hash
        the chain has a member for already is left out (``ON CONFLICT DO NOTHING``).

        Returns:
            how many rows were inserted (the batch's own members).
        """
        inserted = 0
        for page in chunks(rows, MEMBERS_PER_INSERT):
            inserted += self._insert_member_page(conn, batch_id, chain_id, page)
        return inserted

    def _insert_member_page(
        self, conn: Connection, batch_id: int, chain_id: str, page: Sequence[tuple[int, str, int]]
    ) -> int:
        values = [
            {"batch_id": batch_id, "document_id": doc_id, "chain_id": chain_id}
            | {"sha256": sha, "leaf_index": index}
            for doc_id, sha, index in page
        ]
        return len(conn.execute(self.statements.add_members, values).all())

    def known_hashes(self, conn: Connection, chain_id: str, sha256s: Sequence[str]) -> set[str]:
        """The hashes among ``sha256s`` (lowercase hex, distinct) that ``chain_id`` (hex)
        has a notarization of their own (not a batch's root) or a batch member for."""
        n, m = notarizations_table.c, members_table.c
        found: set[str] = set()
        for chunk in chunks(sha256s, IN_CHUNK):
            own = select(n.sha256).where(
                n.chain_id == chain_id, n.sha256.in_(chunk), n.kind != "batch"
            )
            found.update(conn.scalars(own))
            members = select(m.sha256).where(m.chain_id == chain_id, m.sha256.in_(chunk))
            found.update(conn.scalars(members))
        return found


class PostgresDialect(Dialect):
    """PostgreSQL: the portable forms of ``Dialect``."""

    name = "postgresql"

    def __init__(self) -> None:
        super().__init__(postgresql.insert)


class SqliteDialect(Dialect):
    """SQLite: the bulk paths as one JSON array per statement (module docstring)."""

    name = "sqlite"

    def __init__(self) -> None:
        super().__init__(sqlite.insert)

    def _upsert_document_rows(
        self, conn: Connection, source: str, rows: Sequence[tuple[str, str, int]], now: datetime
    ) -> list[Row[Any]]:
        params = {"source": source, "now": now, "rows": _json(rows)}
        return list(conn.execute(_UPSERT_DOCUMENTS_SQLITE, params))

    def _insert_member_page(
        self, conn: Connection, batch_id: int, chain_id: str, page: Sequence[tuple[int, str, int]]
    ) -> int:
        params = {"batch_id": batch_id, "chain_id": chain_id, "rows": _json(page)}
        return int(conn.execute(_INSERT_MEMBERS_SQLITE, params).rowcount)

    def known_hashes(self, conn: Connection, chain_id: str, sha256s: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for page in chunks(sha256s, HASHES_PER_LOOKUP):
            params = {"chain_id": chain_id, "hashes": _json(page)}
            found.update(conn.scalars(_KNOWN_HASHES_SQLITE, params))
        return found


@functools.cache
def dialect_for(name: str) -> Dialect:
    """The ``Dialect`` of a SQLAlchemy dialect name (``engine.dialect.name``), built once.

    Raises:
        ValueError: a backend other than ``"sqlite"`` or ``"postgresql"``.
    """
    if name == "sqlite":
        return SqliteDialect()
    if name == "postgresql":
        return PostgresDialect()
    raise ValueError(f"unsupported audit store backend {name!r} (sqlite or postgresql)")


def _json(rows: Sequence[Sequence[Any]]) -> str:
    # Paths are valid UTF-8 (sources refuse other names): sent as they are, not escaped.
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
