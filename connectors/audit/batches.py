"""The audit store's batches: one notarization per aggregation tree, and its members.

A batch is itself a notarization row (``kind`` ``"batch"``): its ``sha256`` is the tree's
root (hex), its ``batch_size`` the tree's leaf count, and its document a pseudo document of
source ``"batch:<collection>"`` (path and hash: the root), so UNIQUE(chain_id, sha256), the
publish step, the ``ledger`` and ``anchor`` sweeps, failed writes and callbacks work on it
unchanged, and its receipt and anchor are stored once. Its documents are ``batch_members``
rows (leaf index; the audit path only when the batch cannot be rebuilt from its rows, see
``connectors.audit.paths``), UNIQUE(chain_id, sha256): a document is aggregated at most
once per chain. A document's stage is its batch's stage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection, Engine

from connectors.audit.paths import BatchTrees, lost_leaves_paths
from connectors.audit.records import BatchRecord, NewMember, NotarizationRow, Stage
from connectors.audit.repository import Repository
from connectors.audit.sql import (
    IN_CHUNK,
    chunks,
    document_ids,
    hex64,
    hex64_all,
    member_query,
    members_table,
    notarization_row,
    notarizations_table,
    path_missing,
)
from connectors.audit.stages import append_events
from ledger.core.clock import Clock

__all__ = ["BATCH_SOURCE_PREFIX", "Batches", "batch_source"]

#: Source of a batch's pseudo document: kept out of document listings and counts.
BATCH_SOURCE_PREFIX = "batch:"


def batch_source(collection: str) -> str:
    """The source name of the pseudo documents of ``collection``'s batches."""
    return BATCH_SOURCE_PREFIX + collection


class Batches(Repository):
    """Batches of aggregated documents: recorded atomically, read for reports and proofs.

    Args:
        engine, clock: as for every repository (``connectors.audit.repository``).
        trees: where members' audit paths are rebuilt (shared with ``Proofs``).
    """

    def __init__(
        self, engine: Engine, *, clock: Clock | None = None, trees: BatchTrees | None = None
    ) -> None:
        super().__init__(engine, clock=clock)
        self._trees = trees or BatchTrees()

    def record(
        self,
        *,
        collection: str,
        chain_id: str,
        root: str,
        size: int,
        members: Sequence[NewMember],
    ) -> tuple[int, int] | None:
        """Insert a batch (stage ``pending``) and its members in one transaction.

        Members another writer aggregated first (same chain and hash) are left out
        (``ON CONFLICT DO NOTHING``). The batch is kept when at least one member is its
        own; otherwise, or when the same batch (chain, root) exists already, nothing is
        written.

        Args:
            collection, chain_id: the collection and its chain (hex).
            root: hex root of the batch's aggregation tree.
            size: its leaf count (>= 1).
            members: the documents, one per leaf index in ``[0, size)``.

        Returns:
            ``(the batch's notarization id, how many members are its own)``, or ``None``
            when nothing was written.

        Raises:
            ValueError: a hash that is not 64 hex characters, or ``size`` < 1.
        """
        if size < 1:
            raise ValueError(f"a batch has at least one leaf, not {size}")
        chain, tree_root = hex64(chain_id), hex64(root)
        now = self._now()
        # Same order in every writer, so concurrent batches lock members without deadlock.
        hashes = hex64_all(m.sha256 for m in members)
        rows = sorted(
            ((m.document_id, sha, m.leaf_index) for m, sha in zip(members, hashes, strict=True)),
            key=lambda row: row[1],
        )
        with self._engine.connect() as conn, conn.begin() as trans:
            batch_id = self._insert_batch(conn, collection, chain, tree_root, size)
            claimed = 0
            if batch_id is not None:
                claimed = self._dialect.insert_members(
                    conn, batch_id=batch_id, chain_id=chain, rows=rows
                )
            if batch_id is None or not claimed:
                trans.rollback()
                return None
            if claimed < size:  # leaves lost to another batch: cannot be rebuilt from rows
                own = _member_ids(conn, batch_id)
                _store_audit_paths(conn, lost_leaves_paths(conn, batch_id, members, own))
            details = {"size": size, "members": claimed}
            append_events(conn, [(batch_id, "pending", details)], at=now)
        return batch_id, claimed

    def _insert_batch(
        self, conn: Connection, collection: str, chain: str, root: str, size: int
    ) -> int | None:
        now = self._now()
        source = batch_source(collection)
        doc = {"source": source, "path": root, "sha256": root, "size_bytes": size}
        times = {"first_seen_at": now, "last_seen_at": now}
        conn.execute(self._dialect.statements.upsert_documents, [doc | times])
        document_id = document_ids(conn, source, [(root, root)])[(root, root)]
        row = {"document_id": document_id, "collection": collection, "chain_id": chain}
        row |= {"sha256": root, "stage": "pending", "attempts": 0, "kind": "batch"}
        row |= {"batch_size": size, "created_at": now, "updated_at": now}
        inserted = conn.execute(self._dialect.statements.add_notarizations, [row]).all()
        return int(inserted[0].id) if inserted else None

    def read(
        self, *, collection: str | None = None, limit: int = 1000, after_id: int = 0
    ) -> list[BatchRecord]:
        """Batches (of ``collection``) by id: those with ids above ``after_id`` (paging like
        ``Notarizations.pending``), at most ``limit``."""
        n, m = notarizations_table.c, members_table.c
        count = select(func.count()).where(m.batch_id == n.id).scalar_subquery().label("members")
        query = select(
            n.id, n.collection, n.chain_id, n.sha256, n.batch_size, n.entry_hash, n.stage,
            n.dblock_height, count,
        ).where(n.kind == "batch", n.id > after_id)  # fmt: skip
        if collection is not None:
            query = query.where(n.collection == collection)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(n.id).limit(limit))
            return [
                BatchRecord(
                    id=r.id,
                    collection=r.collection,
                    chain_id=r.chain_id,
                    root=r.sha256,
                    size=int(r.batch_size or 0),
                    members=int(r.members),
                    entry_hash=r.entry_hash,
                    stage=cast(Stage, r.stage),
                    dblock_height=r.dblock_height,
                )
                for r in rows
            ]

    def member_counts(self, batch_ids: Iterable[int]) -> dict[int, int]:
        """Batch id -> how many members it has (batches without members are absent)."""
        m = members_table.c
        out: dict[int, int] = {}
        with self._engine.connect() as conn:
            for chunk in chunks(sorted(set(batch_ids)), IN_CHUNK):
                query = (
                    select(m.batch_id, func.count())
                    .where(m.batch_id.in_(chunk))
                    .group_by(m.batch_id)
                )
                out.update({int(i): int(c) for i, c in conn.execute(query)})
        return out

    def members(
        self, batch_id: int, *, limit: int = 10_000, after_leaf: int = -1
    ) -> list[NotarizationRow]:
        """The member documents of a batch, by leaf index (``after_leaf`` pages): each a
        ``NotarizationRow`` with ``is_member`` (path, hash, leaf index, audit path)."""
        m = members_table.c
        query = member_query().where(m.batch_id == batch_id, m.leaf_index > after_leaf)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(m.leaf_index).limit(limit)).all()
            return self._trees.fill(
                conn,
                [notarization_row(r._mapping) for r in rows],
                [path_missing(r._mapping) for r in rows],
            )


def _member_ids(conn: Connection, batch_id: int) -> dict[int, int]:
    """Leaf index -> member id of the ``batch_members`` rows of one batch."""
    m = members_table.c
    query = select(m.leaf_index, m.id).where(m.batch_id == batch_id)
    return {int(index): int(member_id) for index, member_id in conn.execute(query)}


def _store_audit_paths(conn: Connection, paths: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Set ``batch_members.audit_path`` of members ``(member id, hex path leaf first)``: for
    a batch that cannot be rebuilt from its rows (``connectors.audit.paths``)."""
    if paths:
        m = members_table.c
        stmt = update(members_table).where(m.id == bindparam("m_id"))
        params = [{"m_id": i, "m_path": list(p)} for i, p in paths]
        conn.execute(stmt.values(audit_path=bindparam("m_path")), params)
