"""The audit store's proofs: verified receipts (stage ``ledger``) and anchors (``anchor``).

``AuditStore.proofs`` (``connectors.audit.store``). ``missing_receipts`` and
``awaiting_anchor`` / ``awaiting_anchor_blocks`` list what waits; ``save_receipts`` and
``record_anchors`` store what the caller has verified (the anchor also moves the rows of
its directory block to ``anchor``); ``records`` and ``anchors`` read them back for bundles
and reports.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from itertools import islice
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from connectors.audit.paths import BatchTrees
from connectors.audit.records import AnchorRecord, NotarizationRow, ProofRecord, ReceiptRecord
from connectors.audit.repository import Repository
from connectors.audit.sql import (
    ANCHOR_EVENT_KEYS,
    IN_CHUNK,
    anchor_record,
    anchor_values,
    anchored_rows,
    anchors_table,
    chunks,
    collections_table,
    hex64,
    ids_by_entry_hash,
    member_query,
    members_table,
    notarization_row,
    notarizations_table,
    path_missing,
    pending_rows,
    proof_record,
    receipt_values,
    receipts_table,
    row_query,
)
from connectors.audit.stages import advance, record_ledger
from ledger.core.clock import Clock

__all__ = ["PROOF_PAGE_ROWS", "Proofs", "proof_order"]

#: Rows per read of ``Proofs.iter_records`` (a member row with its batch's receipt is a few KB).
PROOF_PAGE_ROWS = 1000


def proof_order(record: ProofRecord) -> tuple[int, int]:
    """Where ``Proofs.records`` lists a record: by notarization id, a batch's members by leaf."""
    return record.notarization.id, record.notarization.leaf_index or 0


def _period_filters(
    query: Any,
    *,
    collection: str | None,
    since: datetime | None,
    until: datetime | None,
) -> Any:
    """``query`` (over notarizations) kept to ``collection`` and ``[since, until)``."""
    n = notarizations_table.c
    if collection is not None:
        query = query.where(n.collection == collection)
    if since is not None:
        query = query.where(n.created_at >= since)
    if until is not None:
        query = query.where(n.created_at < until)
    return query


def _proof_filters(
    query: Any,
    *,
    collection: str | None,
    since: datetime | None,
    until: datetime | None,
) -> Any:
    """``query`` joined with the notarization's receipt (columns ``r_*``) and filtered."""
    n, r = notarizations_table.c, receipts_table.c
    query = query.add_columns(*[c.label(f"r_{c.name}") for c in receipts_table.c])
    query = query.outerjoin(receipts_table, r.notarization_id == n.id)
    return _period_filters(query, collection=collection, since=since, until=until)


class Proofs(Repository):
    """Receipts and anchors of notarizations (built on their stage moves).

    Args:
        engine, clock: as for every repository (``connectors.audit.repository``).
        trees: where members' audit paths are rebuilt (shared with ``Batches``).
    """

    def __init__(
        self, engine: Engine, *, clock: Clock | None = None, trees: BatchTrees | None = None
    ) -> None:
        super().__init__(engine, clock=clock)
        self._trees = trees or BatchTrees()

    # -- receipts --------------------------------------------------------------------------

    def missing_receipts(
        self, *, collection: str | None = None, limit: int = 1000
    ) -> list[NotarizationRow]:
        """Notarizations at ``ledger`` or ``anchor`` with no stored receipt, oldest first."""
        has_receipt = select(receipts_table.c.id).where(
            receipts_table.c.notarization_id == notarizations_table.c.id
        )
        query = row_query().where(
            notarizations_table.c.stage.in_(["ledger", "anchor"]), ~has_receipt.exists()
        )
        if collection is not None:
            query = query.where(notarizations_table.c.collection == collection)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(notarizations_table.c.id).limit(limit))
            return [notarization_row(r._mapping) for r in rows]

    def save_receipts(self, receipts: Sequence[ReceiptRecord]) -> int:
        """Store receipts the caller has verified, one per notarization of the entry hash.

        Receipts for unknown entry hashes, and notarizations that already have one, are
        skipped.

        Returns:
            how many receipt rows were inserted.
        """
        by_hash = {hex64(r.entry_hash): r for r in receipts}
        with self._engine.begin() as conn:
            return self._save_receipts(conn, by_hash, ids_by_entry_hash(conn, set(by_hash)))

    def record_receipts(self, receipts: Sequence[ReceiptRecord]) -> int:
        """``save_receipts`` and ``Notarizations.record_ledger`` (each receipt's directory block height and
        KeyMR) in one transaction: a notarization reaches ``ledger`` together with its
        receipt, never without it, and the entry hashes are looked up once.

        Returns:
            how many notarizations moved to ``ledger``.
        """
        by_hash = {hex64(r.entry_hash): r for r in receipts}
        blocks = {
            h: (int(r.directory_block_height), hex64(r.directory_block_keymr))
            for h, r in by_hash.items()
        }
        with self._engine.begin() as conn:
            ids = ids_by_entry_hash(conn, set(by_hash))
            self._save_receipts(conn, by_hash, ids)
            return record_ledger(conn, blocks, ids, at=self._now())

    def _save_receipts(
        self, conn: Connection, by_hash: Mapping[str, ReceiptRecord], ids: Mapping[int, str]
    ) -> int:
        """``save_receipts`` inside ``conn``'s transaction; ``ids``: notarization id -> entry
        hash (checked hex) of the receipts of ``by_hash``."""
        values = [receipt_values(i, by_hash[h]) for i, h in sorted(ids.items())]
        if not values:
            return 0
        return len(conn.execute(self._dialect.statements.save_receipts, values).all())

    def records(
        self,
        *,
        collection: str | None = None,
        sha256: str | None = None,
        limit: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        batch_id: int | None = None,
    ) -> list[ProofRecord]:
        """Documents' notarizations with their receipts (``None`` if not stored yet), oldest
        first: one record per document, a batch's members (``is_member``) as records of their
        own with the batch's stage, entry and receipt (stored once, for the batch). Batch
        rows themselves are not listed (``Batches.read``). ``iter_records`` yields the same
        records page by page, for a whole collection.

        Args:
            collection: only this collection.
            sha256: only notarizations of this document hash (hex).
            limit: at most this many.
            since, until: only notarizations created in ``[since, until)`` (aware datetimes).
            batch_id: only the members of this batch.
        """
        found = self.iter_records(
            collection=collection,
            sha256=sha256,
            since=since,
            until=until,
            batch_id=batch_id,
            page_size=limit or PROOF_PAGE_ROWS,
        )
        return list(islice(found, limit))

    def iter_records(
        self,
        *,
        collection: str | None = None,
        sha256: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        batch_id: int | None = None,
        page_size: int = PROOF_PAGE_ROWS,
    ) -> Iterator[ProofRecord]:
        """The records of ``records`` (same filters, same order: by notarization id, a batch's
        members by leaf index), read ``page_size`` rows at a time, each page in its own short
        read: memory stays flat however many documents a collection holds, and no read
        transaction is held open between pages. Rows written meanwhile may or may not be
        seen.

        Raises:
            ValueError: ``page_size`` < 1.
            AuditPathError: a batch's tree cannot be rebuilt or does not match its root.
        """
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        n, m = notarizations_table.c, members_table.c
        own = row_query().where(n.kind != "batch")
        members = member_query()
        batches = select(n.id).where(n.kind == "batch")
        if sha256 is not None:
            sha = hex64(sha256)
            own, members = own.where(n.sha256 == sha), members.where(m.sha256 == sha)
            holding = select(m.batch_id).where(m.sha256 == sha)
            if collection is not None:  # by the (chain_id, sha256) index, not a scan
                chains = select(collections_table.c.chain_id)
                in_chain = m.chain_id.in_(chains.where(collections_table.c.name == collection))
                holding, members = holding.where(in_chain), members.where(in_chain)
            batches = batches.where(n.id.in_(holding))
        if batch_id is not None:
            batches = batches.where(n.id == batch_id)
        filtered = partial(_proof_filters, collection=collection, since=since, until=until)
        batches = _period_filters(batches, collection=collection, since=since, until=until)
        pages = [self._member_pages(batches, filtered(members), page_size)]
        if batch_id is None:  # else only that batch's members
            pages.append(self._own_pages(filtered(own), page_size))
        yield from heapq.merge(*pages, key=proof_order)

    def _own_pages(self, query: Any, page_size: int) -> Iterator[ProofRecord]:
        n = notarizations_table.c
        after = -1
        while True:
            page = self._proof_page(query.where(n.id > after).order_by(n.id), page_size)
            yield from page
            if len(page) < page_size:
                return
            after = page[-1].notarization.id

    def _member_pages(self, batches: Any, members: Any, page_size: int) -> Iterator[ProofRecord]:
        """The ``members`` of each batch ``batches`` selects (ids), batch by batch, each
        batch's members by leaf index: one indexed read per page (``batch_members.batch_id``)."""
        n, m = notarizations_table.c, members_table.c
        after_batch = -1
        while True:
            with self._engine.connect() as conn:
                ids = conn.execute(
                    batches.where(n.id > after_batch).order_by(n.id).limit(page_size)
                )
                batch_ids = list(ids.scalars())
            for batch_id in batch_ids:
                of_batch = members.where(m.batch_id == batch_id).order_by(m.leaf_index)
                after_leaf = -1
                while True:
                    page = self._proof_page(of_batch.where(m.leaf_index > after_leaf), page_size)
                    yield from page
                    if len(page) < page_size:
                        break
                    after_leaf = proof_order(page[-1])[1]
            if len(batch_ids) < page_size:
                return
            after_batch = batch_ids[-1]

    def _proof_page(self, query: Any, page_size: int) -> list[ProofRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(query.limit(page_size)).all()
            found = [proof_record(row._mapping) for row in rows]
            if any(missing := [path_missing(row._mapping) for row in rows]):
                filled = self._trees.fill(conn, [p.notarization for p in found], missing)
                found = [replace(p, notarization=r) for p, r in zip(found, filled, strict=True)]
        return found

    def of_document(
        self, collection: str, sha256: str
    ) -> tuple[ProofRecord, AnchorRecord | None] | None:
        """The proof parts of one document of ``collection`` (hex ``sha256``): its row (for a
        batch member, with its leaf index and audit path) with the receipt, and the anchor,
        both its batch's when aggregated (stored once per batch); ``None`` if not notarized.
        """
        found = self.records(collection=collection, sha256=sha256, limit=1)
        if not found:
            return None
        anchors = self.anchors(notarization_ids=[found[0].notarization.id])
        return found[0], anchors.get(found[0].notarization.id)

    # -- anchors ---------------------------------------------------------------------------

    def awaiting_anchor(
        self, *, collection: str | None = None, limit: int = 1000, after_id: int = 0
    ) -> list[NotarizationRow]:
        """Notarizations at ``ledger`` (in a directory block, not anchored yet), by id.

        ``after_id`` pages through the rows like ``Notarizations.pending``.
        """
        with self._engine.connect() as conn:
            rows = pending_rows(conn, row_query(), "anchor", "ledger", collection, limit, after_id)
            return [notarization_row(r._mapping) for r in rows]

    def awaiting_anchor_blocks(self, *, collection: str | None = None) -> list[tuple[int, str]]:
        """Distinct ``(directory block height, KeyMR hex)`` of rows waiting for ``anchor``,
        lowest height first: one ``anchors`` call to the node per block."""
        n = notarizations_table.c
        query = (
            select(n.dblock_height, n.dblock_keymr)
            .where(n.stage == "ledger", n.dblock_height.is_not(None))
            .distinct()
        )
        if collection is not None:
            query = query.where(n.collection == collection)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(n.dblock_height, n.dblock_keymr))
            return [(int(r.dblock_height), str(r.dblock_keymr)) for r in rows]

    def record_anchors(
        self, anchors: Sequence[AnchorRecord], *, collection: str | None = None
    ) -> int:
        """Store verified anchors and move the rows of the anchored blocks to ``anchor``.

        Each record applies to every notarization (of ``collection``, if given) at stage
        ``ledger`` or ``anchor`` whose directory block has the record's height and KeyMR;
        rows whose stored KeyMR differs are left alone (that anchor is not for their
        block). One ``anchors`` row per notarization: recording again refreshes its
        ``confirmations``, hashes, ``raw`` and ``verified_at`` without a new stage event.
        Moving to ``anchor`` appends an ``anchor`` event with ``{"dblock_height",
        "anchor_block_hash", "transaction_id", "confirmations"}``.

        Returns:
            how many rows moved to ``anchor``.

        Raises:
            ValueError: a hash that is not 64 hex characters, or a negative number.
        """
        by_height = {int(a.dblock_height): anchor_values(a) for a in anchors}
        with self._engine.begin() as conn:
            stages, values = anchored_rows(conn, by_height, collection)
            if values:
                conn.execute(self._dialect.statements.record_anchors, values)
            to_move = {v["notarization_id"]: v for v in values}
            to_move = {i: v for i, v in to_move.items() if stages[i] == "ledger"}
            details = {i: {k: v[k] for k in ANCHOR_EVENT_KEYS} for i, v in to_move.items()}
            moves: dict[int, dict[str, object]] = {i: {} for i in to_move}
            return advance(conn, moves, "anchor", at=self._now(), details=details)

    def anchors(
        self, *, collection: str | None = None, notarization_ids: Iterable[int] | None = None
    ) -> dict[int, AnchorRecord]:
        """Stored anchors: notarization id -> record (of ``collection`` / these ids)."""
        a, n = anchors_table.c, notarizations_table.c
        query = select(anchors_table).join(notarizations_table, a.notarization_id == n.id)
        if collection is not None:
            query = query.where(n.collection == collection)
        out: dict[int, AnchorRecord] = {}
        ids = None if notarization_ids is None else sorted(set(notarization_ids))
        with self._engine.connect() as conn:
            for chunk in [None] if ids is None else chunks(ids, IN_CHUNK):
                chunk_query = query if chunk is None else query.where(a.notarization_id.in_(chunk))
                for row in conn.execute(chunk_query.order_by(a.notarization_id)):
                    out[row.notarization_id] = anchor_record(row._mapping)
        return out
