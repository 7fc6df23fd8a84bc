"""The audit store's documents and notarizations: recording them and moving their stages.

``AuditStore.notarizations`` (``connectors.audit.store``). The stage life cycle (forward
only, ``failed`` terminal, one ``stage_events`` row per change) is drawn in
``connectors.audit.stages``; a document hash is notarized at most once per chain
(UNIQUE(chain_id, sha256)).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update

from connectors.audit.records import (
    DocumentIn,
    NewNotarization,
    NotarizationRow,
    Stage,
    StageEventRecord,
)
from connectors.audit.repository import Repository
from connectors.audit.sql import (
    IN_CHUNK,
    aware_utc,
    chunks,
    documents_table,
    events_table,
    hex64,
    hex64_all,
    ids_by_entry_hash,
    members_table,
    notarization_row,
    notarizations_table,
    pending_rows,
    row_query,
)
from connectors.audit.stages import STAGE_TIME_COLUMN, advance, append_events, record_ledger

__all__ = ["Notarizations"]


class Notarizations(Repository):
    """Documents seen by sources, their notarizations per chain, stage moves and events
    (engine and clock: ``connectors.audit.repository.Repository``)."""

    # -- documents -------------------------------------------------------------------------

    def upsert_documents(self, source: str, docs: Sequence[DocumentIn]) -> list[int]:
        """Record documents seen now in ``source``; one row per (source, path, sha256).

        A known (source, path, sha256) keeps its ``first_seen_at`` and gets a new
        ``last_seen_at``; changed content at the same path is a new row.

        Returns:
            the document ids, in the order of ``docs``.

        Raises:
            ValueError: a ``sha256`` that is not 64 hex characters.
        """
        now = self._now()
        keys = list(zip([d.path for d in docs], hex64_all(d.sha256 for d in docs), strict=True))
        unique = {key: d.size_bytes for key, d in zip(keys, docs, strict=True)}
        rows = [(p, h, size) for (p, h), size in unique.items()]
        ids: dict[tuple[str, str], int] = {}
        with self._engine.begin() as conn:
            # RETURNING gives every row, inserted or updated: no read-back query.
            for row in self._dialect.upsert_documents(conn, source=source, rows=rows, now=now):
                ids[(row.path, row.sha256)] = row.id
        return [ids[key] for key in keys]

    # -- notarizations ---------------------------------------------------------------------

    def known_hashes(self, chain_id: str, sha256s: Iterable[str]) -> set[str]:
        """The hashes among ``sha256s`` already notarized (at any stage) in ``chain_id``:
        by an entry of their own, or as a member of a batch."""
        wanted = sorted(set(hex64_all(sha256s)))
        with self._engine.connect() as conn:
            return self._dialect.known_hashes(conn, hex64(chain_id), wanted)

    def notarized_at(
        self, chain_id: str, sha256s: Iterable[str]
    ) -> dict[str, tuple[int, datetime]]:
        """The notarizations of these hashes in ``chain_id`` (at any stage): a document's
        own entry, or for a member of a batch the batch's notarization.

        Returns:
            hash (lowercase hex) -> (notarization id, ``created_at``, aware UTC; for a
            member, its batch's); hashes not notarized in the chain are absent.
        """
        wanted = sorted(set(hex64_all(sha256s)))
        chain = hex64(chain_id)
        n, m = notarizations_table.c, members_table.c
        found: dict[str, tuple[int, datetime]] = {}
        with self._engine.connect() as conn:
            for chunk in chunks(wanted, IN_CHUNK):
                own = select(n.sha256, n.id, n.created_at).where(
                    n.chain_id == chain, n.sha256.in_(chunk), n.kind != "batch"
                )
                members = (
                    select(m.sha256, n.id, n.created_at)
                    .select_from(members_table.join(notarizations_table, m.batch_id == n.id))
                    .where(m.chain_id == chain, m.sha256.in_(chunk))
                )
                for query in (own, members):
                    for row in conn.execute(query):
                        found[row.sha256] = (int(row.id), aware_utc(row.created_at))
        return found

    def add(self, rows: Sequence[NewNotarization]) -> list[int]:
        """Insert notarizations at stage ``pending``, ignoring (chain_id, sha256) duplicates.

        Duplicates inside ``rows`` or already in the table are skipped silently, also when
        another writer inserts them concurrently.

        Returns:
            the ids of the rows actually inserted, in input order.
        """
        now = self._now()
        unique = {(hex64(r.chain_id), hex64(r.sha256)): r for r in rows}
        values = [
            {"document_id": r.document_id, "collection": r.collection, "chain_id": key[0]}
            | {"sha256": key[1], "stage": "pending", "attempts": 0}
            | {"kind": r.kind, "batch_size": None}
            | {"created_at": now, "updated_at": now}
            for key, r in unique.items()
        ]
        new: dict[tuple[str, str], int] = {}
        with self._engine.begin() as conn:
            if values:
                for row in conn.execute(self._dialect.statements.add_notarizations, values):
                    new[(row.chain_id, row.sha256)] = row.id
            ordered = [new[key] for key in unique if key in new]
            append_events(conn, [(i, "pending", None) for i in ordered], at=now)
        return ordered

    def mark_published(self, entry_hashes: Mapping[int, str], *, then: Stage | None = None) -> int:
        """Move ``pending`` notarizations to ``published`` with their entry hash.

        Args:
            entry_hashes: notarization id -> entry hash (hex) returned by the publishing API.
            then: a later stage to move the same notarizations to in the same transaction
                (as ``mark_stage`` would, by id: ``multi_az`` once the API has the entry
                durably), also those already past ``pending``; each move is logged.

        Returns:
            how many rows moved to ``published`` (rows already past ``pending`` or failed
            are left alone).

        Raises:
            ValueError: ``then`` is not a stage after ``published`` that ``mark_stage`` takes.
        """
        if then is not None and (then not in STAGE_TIME_COLUMN or then == "published"):
            raise ValueError(f"cannot move on to stage {then!r} with mark_published")
        now = self._now()
        with self._engine.begin() as conn:
            changes = {int(i): {"entry_hash": hex64(h)} for i, h in entry_hashes.items()}
            moved = advance(conn, changes, "published", at=now)
            if then is not None:
                advance(conn, dict.fromkeys(changes, {}), then, at=now)
            return moved

    def mark_stage(
        self,
        entry_hashes: Iterable[str],
        stage: Stage,
        *,
        details: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> int:
        """Move the notarizations of these entry hashes forward to ``stage``.

        Use ``record_ledger`` for ``ledger`` (it also stores the directory block).

        Args:
            entry_hashes: hex entry hashes.
            stage: ``published``, ``multi_az``, ``ledger`` or ``anchor``.
            details: optional entry hash -> JSON details for the stage event (e.g.
                ``{"anchor_block_hash": ...}``).

        Returns:
            how many rows moved (never backwards; failed rows are left alone).
        """
        if stage not in STAGE_TIME_COLUMN:
            raise ValueError(f"cannot move to stage {stage!r} with mark_stage")
        extra = {hex64(h): dict(d) for h, d in (details or {}).items()}
        with self._engine.begin() as conn:
            ids = ids_by_entry_hash(conn, {hex64(h) for h in entry_hashes})
            changes: dict[int, dict[str, Any]] = {i: {} for i in ids}
            event_details = {i: extra.get(h) for i, h in ids.items()}
            return advance(conn, changes, stage, at=self._now(), details=event_details)

    def record_ledger(self, blocks: Mapping[str, tuple[int, str]]) -> int:
        """Move entries to ``ledger`` with the directory block that holds them.

        Args:
            blocks: entry hash (hex) -> (directory block height, directory block KeyMR hex).

        Returns:
            how many rows moved.
        """
        by_hash = {hex64(h): (int(height), hex64(keymr)) for h, (height, keymr) in blocks.items()}
        with self._engine.begin() as conn:
            ids = ids_by_entry_hash(conn, set(by_hash))
            return record_ledger(conn, by_hash, ids, at=self._now())

    def mark_failed(self, errors: Mapping[int, str], *, retryable: bool) -> None:
        """Record errors for notarizations (by id).

        Args:
            errors: notarization id -> error message.
            retryable: False moves the rows to the terminal stage ``failed`` (event
                ``failed``); True keeps the stage, increments ``attempts`` and appends an
                ``error`` event, so the row stays in ``pending(...)`` sweeps.
        """
        now = self._now()
        values: dict[str, Any] = {"updated_at": now, "attempts": notarizations_table.c.attempts + 1}
        if not retryable:
            values["stage"] = "failed"
        event_stage = "error" if retryable else "failed"
        # Rows sharing a message are updated together, and the events logged are those of
        # the rows this statement changed (``RETURNING``), not of a read made before it:
        # two workers failing one row for good at once log ``failed`` once.
        by_error: dict[str, list[int]] = {}
        for i, error in errors.items():
            by_error.setdefault(error, []).append(int(i))
        n = notarizations_table.c
        events: list[tuple[int, str, dict[str, Any]]] = []
        with self._engine.begin() as conn:
            for error, ids in by_error.items():
                for chunk in chunks(sorted(set(ids)), IN_CHUNK):
                    stmt = update(notarizations_table).where(n.id.in_(chunk), n.stage != "failed")
                    changed = conn.scalars(stmt.values(error=error, **values).returning(n.id))
                    detail = {"error": error, "retryable": retryable}
                    events += [(i, event_stage, detail) for i in sorted(changed.all())]
            append_events(conn, sorted(events, key=lambda e: e[0]), at=now)

    def pending(
        self,
        *,
        stage_below: Stage,
        stage_from: Stage = "pending",
        collection: str | None = None,
        limit: int = 1000,
        after_id: int = 0,
    ) -> list[NotarizationRow]:
        """Notarizations needing stage work: stage in ``[stage_from, stage_below)``.

        ``after_id`` pages through the rows: only ids greater than it are returned.

        Example: ``pending(stage_below="published")`` are rows to publish;
        ``pending(stage_from="published", stage_below="ledger")`` are rows waiting for a
        directory block. Failed rows are never returned. Ordered by id (oldest first).
        """
        query = row_query()
        with self._engine.connect() as conn:
            rows = pending_rows(conn, query, stage_below, stage_from, collection, limit, after_id)
            return [notarization_row(r._mapping) for r in rows]

    def pending_entries(
        self,
        *,
        stage_below: Stage,
        stage_from: Stage = "pending",
        collection: str | None = None,
        limit: int = 1000,
        after_id: int = 0,
    ) -> list[tuple[int, str | None]]:
        """``(id, entry_hash)`` of the rows ``pending`` returns, in the same order.

        The ``ledger`` sweep needs only these two columns of every waiting row; building
        whole ``NotarizationRow`` objects (a join with the documents, times made aware)
        was ~8 % of the flow's CPU in the entry mode.
        """
        n, d = notarizations_table.c, documents_table.c
        # joined as in ``row_query``: the same rows as ``pending``
        columns = select(n.id, n.entry_hash).join(documents_table, n.document_id == d.id)
        with self._engine.connect() as conn:
            rows = pending_rows(conn, columns, stage_below, stage_from, collection, limit, after_id)
            return [(int(r.id), r.entry_hash) for r in rows]

    def newest_id(self) -> int:
        """The greatest notarization id so far (0 when there is none): the rows a run
        records after reading it have greater ids."""
        with self._engine.connect() as conn:
            return int(conn.scalar(select(func.max(notarizations_table.c.id))) or 0)

    def by_ids(self, ids: Iterable[int]) -> list[NotarizationRow]:
        """The notarizations of these ids (those that exist), by id."""
        n = notarizations_table.c
        out: list[NotarizationRow] = []
        with self._engine.connect() as conn:
            for chunk in chunks(sorted(set(ids)), IN_CHUNK):
                rows = conn.execute(row_query().where(n.id.in_(chunk)).order_by(n.id))
                out += [notarization_row(r._mapping) for r in rows]
        return out

    def events(self, notarization_id: int) -> list[StageEventRecord]:
        """The stage events of one notarization, oldest first."""
        e = events_table.c
        query = select(e.stage, e.at, e.details).where(e.notarization_id == notarization_id)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(e.id))
            return [StageEventRecord(r.stage, aware_utc(r.at), r.details) for r in rows]

    def stage_events(self, notarization_ids: Iterable[int]) -> dict[int, list[StageEventRecord]]:
        """The stage events of many notarizations: id -> events oldest first (ids without
        events are absent)."""
        e = events_table.c
        out: dict[int, list[StageEventRecord]] = {}
        with self._engine.connect() as conn:
            for chunk in chunks(sorted(set(notarization_ids)), IN_CHUNK):
                query = select(e.notarization_id, e.stage, e.at, e.details).where(
                    e.notarization_id.in_(chunk)
                )
                for r in conn.execute(query.order_by(e.id)):
                    record = StageEventRecord(r.stage, aware_utc(r.at), r.details)
                    out.setdefault(r.notarization_id, []).append(record)
        return out
