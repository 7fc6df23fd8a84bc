"""The SQL audit store: the pipeline's record of truth (documents, notarizations, receipts).

``AuditStore(url)`` works on SQLite (default; a file in WAL mode) and PostgreSQL
(``postgresql+psycopg://host:port/db``). Every public method is one transaction and takes
or returns a whole batch, so thousands of documents cost a handful of statements.

Stage life cycle of a notarization (``STAGE_ORDER``)::

    pending -> published -> multi_az -> ledger -> anchor          (forward only; skips allowed)
       any stage ----------------------------------> failed       (terminal, mark_failed)

Every stage change appends a ``stage_events`` row in the same transaction; a retryable
error appends an ``"error"`` event without changing the stage. A document hash is
notarized at most once per chain (UNIQUE(chain_id, sha256)); duplicates are ignored with
``INSERT ... ON CONFLICT DO NOTHING`` (SQLite >= 3.35 and PostgreSQL). Other SQL backends
are refused with ``ValueError``.

The anchor stage: ``awaiting_anchor`` / ``awaiting_anchor_blocks`` list what waits for it,
``record_anchors`` stores verified anchors (one per notarization, by directory block) and
moves ``ledger`` rows to ``anchor``.

Hex values (sha256, entry hashes, key Merkle roots, chain ids) are 64-char strings and are
stored lowercase. Times are timezone-aware UTC ``datetime`` values from the injected clock.

The schema is managed by Alembic (``connectors.migrations``): opening a store upgrades the
database to the newest revision, stamping one made by ``create_all`` before migrations
existed (``MigrationError`` when existing tables do not match).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

from sqlalchemy import Table, bindparam, func, insert, or_, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from connectors import migrations
from connectors.audit_engine import build_engine
from connectors.audit_models import (
    ALL_STAGES,
    AUDIT_METADATA,
    STAGE_ORDER,
    AnchorRecord,
    DocumentIn,
    NewNotarization,
    NotarizationRow,
    ProofRecord,
    ReceiptRecord,
    RunStatus,
    Stage,
    StageEventRecord,
)
from connectors.migrations import MigrationError
from ledger.core.clock import Clock, SystemClock

__all__ = [
    "ALL_STAGES",
    "STAGE_ORDER",
    "AnchorRecord",
    "AuditStore",
    "DocumentIn",
    "MigrationError",
    "NewNotarization",
    "NotarizationRow",
    "ProofRecord",
    "ReceiptRecord",
    "RunStatus",
    "Stage",
    "StageEventRecord",
]

_HEX64 = re.compile(r"[0-9a-f]{64}")
_IN_CHUNK = 500  # ids / hashes per IN (...) clause
_STAGE_TIME_COLUMN = {
    "published": "published_at",
    "multi_az": "multi_az_at",
    "ledger": "ledger_at",
    "anchor": "anchored_at",
}

_ROW_TIMES = ("created_at", "updated_at", "published_at", "multi_az_at", "ledger_at", "anchored_at")

T = TypeVar("T")

_documents: Table = AUDIT_METADATA.tables["documents"]
_notarizations: Table = AUDIT_METADATA.tables["notarizations"]
_events: Table = AUDIT_METADATA.tables["stage_events"]
_receipts: Table = AUDIT_METADATA.tables["receipts"]
_runs: Table = AUDIT_METADATA.tables["runs"]
_anchors: Table = AUDIT_METADATA.tables["anchors"]


# -- the store -----------------------------------------------------------------------------


class AuditStore:
    """Batch-oriented access to the audit tables.

    Args:
        url: SQLAlchemy URL: ``sqlite:///path/audit.db`` (parent folder created; WAL mode),
            ``sqlite://`` (in memory) or ``postgresql+psycopg://host:port/db``.
        clock: source of time (``now() -> float`` Unix seconds); the wall clock by default.
        schema: PostgreSQL schema to hold the tables (created if missing), set as the
            connections' ``search_path`` so raw SQL finds the tables too; ``None`` for the
            server's default search path. Not supported on SQLite.
        create_tables: bring the schema up to date now (``create_tables()``).
        connect_retry_s: PostgreSQL only: how long a new connection is tried again while
            the server refuses connections because it is restarting, seconds (0: never).
            Together with the pool's ping before use, a server restart shorter than this
            costs a pause, not a failed run.

    Raises:
        ValueError: a backend other than SQLite or PostgreSQL, or ``schema`` on SQLite.
        MigrationError: the database holds tables that are not a recognisable audit store.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock | None = None,
        schema: str | None = None,
        create_tables: bool = True,
        connect_retry_s: float = 30.0,
    ) -> None:
        self._clock: Clock = clock or SystemClock()
        self._schema = schema
        self._engine = build_engine(url, schema=schema, connect_retry_s=connect_retry_s)
        self._dialect = self._engine.dialect.name
        self._statements = _statements(self._dialect)
        if create_tables:
            self.create_tables()

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for migrations and reports)."""
        return self._engine

    def create_tables(self) -> None:
        """Create the schema (PostgreSQL, when given) and migrate the audit tables to the
        newest revision (``connectors.migrations.upgrade``; a no-op when up to date).

        Raises:
            MigrationError: existing tables that do not match any revision.
        """
        if self._schema is not None:
            with self._engine.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"'))
        migrations.upgrade(self._engine)

    def schema_revision(self) -> str | None:
        """The Alembic revision of the database (``migrations.HEAD_REVISION`` once open)."""
        return migrations.current_revision(self._engine)

    def close(self) -> None:
        """Dispose of the connection pool."""
        self._engine.dispose()

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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
        unique = {(d.path, _hex(d.sha256)): d.size_bytes for d in docs}
        values = [
            {"source": source, "path": p, "sha256": h, "size_bytes": size}
            | {"first_seen_at": now, "last_seen_at": now}
            for (p, h), size in unique.items()
        ]
        with self._engine.begin() as conn:
            if values:
                conn.execute(self._statements.upsert_documents, values)
            ids = _document_ids(conn, source, unique)
        return [ids[(d.path, _hex(d.sha256))] for d in docs]

    # -- notarizations ---------------------------------------------------------------------

    def known_hashes(self, chain_id: str, sha256s: Iterable[str]) -> set[str]:
        """The hashes among ``sha256s`` already notarized (at any stage) in ``chain_id``."""
        wanted = sorted({_hex(h) for h in sha256s})
        found: set[str] = set()
        with self._engine.connect() as conn:
            for chunk in _chunks(wanted, _IN_CHUNK):
                query = select(_notarizations.c.sha256).where(
                    _notarizations.c.chain_id == _hex(chain_id),
                    _notarizations.c.sha256.in_(chunk),
                )
                found.update(conn.scalars(query))
        return found

    def add_notarizations(self, rows: Sequence[NewNotarization]) -> list[int]:
        """Insert notarizations at stage ``pending``, ignoring (chain_id, sha256) duplicates.

        Duplicates inside ``rows`` or already in the table are skipped silently, also when
        another writer inserts them concurrently.

        Returns:
            the ids of the rows actually inserted, in input order.
        """
        now = self._now()
        unique = {(_hex(r.chain_id), _hex(r.sha256)): r for r in rows}
        values = [
            {"document_id": r.document_id, "collection": r.collection, "chain_id": key[0]}
            | {"sha256": key[1], "stage": "pending", "attempts": 0}
            | {"created_at": now, "updated_at": now}
            for key, r in unique.items()
        ]
        new: dict[tuple[str, str], int] = {}
        with self._engine.begin() as conn:
            if values:
                for row in conn.execute(self._statements.add_notarizations, values):
                    new[(row.chain_id, row.sha256)] = row.id
            ordered = [new[key] for key in unique if key in new]
            _append_events(conn, [(i, "pending", None) for i in ordered], at=now)
        return ordered

    def mark_published(self, entry_hashes: Mapping[int, str]) -> int:
        """Move ``pending`` notarizations to ``published`` with their entry hash.

        Args:
            entry_hashes: notarization id -> entry hash (hex) returned by the publishing API.

        Returns:
            how many rows moved (rows already past ``pending`` or failed are left alone).
        """
        with self._engine.begin() as conn:
            changes = {int(i): {"entry_hash": _hex(h)} for i, h in entry_hashes.items()}
            return self._advance(conn, changes, "published")

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
        if stage not in _STAGE_TIME_COLUMN:
            raise ValueError(f"cannot move to stage {stage!r} with mark_stage")
        extra = {_hex(h): dict(d) for h, d in (details or {}).items()}
        with self._engine.begin() as conn:
            ids = _ids_by_entry_hash(conn, {_hex(h) for h in entry_hashes})
            changes: dict[int, dict[str, Any]] = {i: {} for i in ids}
            event_details = {i: extra.get(h) for i, h in ids.items()}
            return self._advance(conn, changes, stage, details=event_details)

    def record_ledger(self, blocks: Mapping[str, tuple[int, str]]) -> int:
        """Move entries to ``ledger`` with the directory block that holds them.

        Args:
            blocks: entry hash (hex) -> (directory block height, directory block KeyMR hex).

        Returns:
            how many rows moved.
        """
        by_hash = {_hex(h): (int(height), _hex(keymr)) for h, (height, keymr) in blocks.items()}
        with self._engine.begin() as conn:
            ids = _ids_by_entry_hash(conn, set(by_hash))
            changes: dict[int, dict[str, Any]] = {}
            details: dict[int, dict[str, Any] | None] = {}
            for i, h in ids.items():
                height, keymr = by_hash[h]
                changes[i] = {"dblock_height": height, "dblock_keymr": keymr}
                details[i] = {"dblock_height": height, "dblock_keymr": keymr}
            return self._advance(conn, changes, "ledger", details=details)

    def mark_failed(self, errors: Mapping[int, str], *, retryable: bool) -> None:
        """Record errors for notarizations (by id).

        Args:
            errors: notarization id -> error message.
            retryable: False moves the rows to the terminal stage ``failed`` (event
                ``failed``); True keeps the stage, increments ``attempts`` and appends an
                ``error`` event, so the row stays in ``pending(...)`` sweeps.
        """
        now = self._now()
        values = {"updated_at": now, "attempts": _notarizations.c.attempts + 1}
        if not retryable:
            values["stage"] = "failed"
        event_stage = "error" if retryable else "failed"
        with self._engine.begin() as conn:
            n = _notarizations.c
            stmt = update(_notarizations).where(n.id == bindparam("_id"), n.stage != "failed")
            live = _live_ids(conn, list(errors))
            if not live:
                return
            conn.execute(
                stmt.values(error=bindparam("_error"), **values),
                [{"_id": i, "_error": errors[i]} for i in live],
            )
            evts = [(i, event_stage, {"error": errors[i], "retryable": retryable}) for i in live]
            _append_events(conn, evts, at=now)

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
        start, end = STAGE_ORDER.index(stage_from), STAGE_ORDER.index(stage_below)
        stages = list(STAGE_ORDER[start:end])
        query = _row_query().where(
            _notarizations.c.stage.in_(stages), _notarizations.c.id > after_id
        )
        if collection is not None:
            query = query.where(_notarizations.c.collection == collection)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(_notarizations.c.id).limit(limit))
            return [_notarization_row(r._mapping) for r in rows]

    def missing_receipts(
        self, *, collection: str | None = None, limit: int = 1000
    ) -> list[NotarizationRow]:
        """Notarizations at ``ledger`` or ``anchor`` with no stored receipt, oldest first."""
        has_receipt = select(_receipts.c.id).where(
            _receipts.c.notarization_id == _notarizations.c.id
        )
        query = _row_query().where(
            _notarizations.c.stage.in_(["ledger", "anchor"]), ~has_receipt.exists()
        )
        if collection is not None:
            query = query.where(_notarizations.c.collection == collection)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(_notarizations.c.id).limit(limit))
            return [_notarization_row(r._mapping) for r in rows]

    # -- receipts --------------------------------------------------------------------------

    def save_receipts(self, receipts: Sequence[ReceiptRecord]) -> int:
        """Store receipts the caller has verified, one per notarization of the entry hash.

        Receipts for unknown entry hashes, and notarizations that already have one, are
        skipped.

        Returns:
            how many receipt rows were inserted.
        """
        by_hash = {_hex(r.entry_hash): r for r in receipts}
        inserted = 0
        with self._engine.begin() as conn:
            ids = _ids_by_entry_hash(conn, set(by_hash))
            values = [_receipt_values(i, by_hash[h]) for i, h in sorted(ids.items())]
            if values:
                inserted = len(conn.execute(self._statements.save_receipts, values).all())
        return inserted

    def proofs(
        self,
        *,
        collection: str | None = None,
        sha256: str | None = None,
        limit: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[ProofRecord]:
        """Notarizations with their receipts (``None`` if not stored yet), oldest first.

        Args:
            collection: only this collection.
            sha256: only notarizations of this document hash (hex).
            limit: at most this many.
            since, until: only notarizations created in ``[since, until)`` (aware datetimes).
        """
        r = _receipts.c
        query = _row_query().add_columns(*[c.label(f"r_{c.name}") for c in _receipts.c])
        query = query.outerjoin(_receipts, r.notarization_id == _notarizations.c.id)
        if collection is not None:
            query = query.where(_notarizations.c.collection == collection)
        if sha256 is not None:
            query = query.where(_notarizations.c.sha256 == _hex(sha256))
        if since is not None:
            query = query.where(_notarizations.c.created_at >= since)
        if until is not None:
            query = query.where(_notarizations.c.created_at < until)
        query = query.order_by(_notarizations.c.id).limit(limit)
        with self._engine.connect() as conn:
            return [_proof_record(row._mapping) for row in conn.execute(query)]

    def events(self, notarization_id: int) -> list[StageEventRecord]:
        """The stage events of one notarization, oldest first."""
        e = _events.c
        query = select(e.stage, e.at, e.details).where(e.notarization_id == notarization_id)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(e.id))
            return [StageEventRecord(r.stage, _aware(r.at), r.details) for r in rows]

    def stage_events(self, notarization_ids: Iterable[int]) -> dict[int, list[StageEventRecord]]:
        """The stage events of many notarizations: id -> events oldest first (ids without
        events are absent)."""
        e = _events.c
        out: dict[int, list[StageEventRecord]] = {}
        with self._engine.connect() as conn:
            for chunk in _chunks(sorted(set(notarization_ids)), _IN_CHUNK):
                query = select(e.notarization_id, e.stage, e.at, e.details).where(
                    e.notarization_id.in_(chunk)
                )
                for r in conn.execute(query.order_by(e.id)):
                    record = StageEventRecord(r.stage, _aware(r.at), r.details)
                    out.setdefault(r.notarization_id, []).append(record)
        return out

    # -- anchors ---------------------------------------------------------------------------

    def awaiting_anchor(
        self, *, collection: str | None = None, limit: int = 1000, after_id: int = 0
    ) -> list[NotarizationRow]:
        """Notarizations at ``ledger`` (in a directory block, not anchored yet), by id.

        ``after_id`` pages through the rows like ``pending``.
        """
        return self.pending(
            stage_from="ledger",
            stage_below="anchor",
            collection=collection,
            limit=limit,
            after_id=after_id,
        )

    def awaiting_anchor_blocks(self, *, collection: str | None = None) -> list[tuple[int, str]]:
        """Distinct ``(directory block height, KeyMR hex)`` of rows waiting for ``anchor``,
        lowest height first: one ``anchors`` call to the node per block."""
        n = _notarizations.c
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
        by_height = {int(a.dblock_height): _anchor_values(a) for a in anchors}
        with self._engine.begin() as conn:
            stages, values = _anchored_rows(conn, by_height, collection)
            if values:
                conn.execute(self._statements.record_anchors, values)
            to_move = {v["notarization_id"]: v for v in values}
            to_move = {i: v for i, v in to_move.items() if stages[i] == "ledger"}
            details = {i: {k: v[k] for k in _ANCHOR_EVENT_KEYS} for i, v in to_move.items()}
            return self._advance(conn, dict.fromkeys(to_move, {}), "anchor", details=details)

    def stored_anchors(
        self, *, collection: str | None = None, notarization_ids: Iterable[int] | None = None
    ) -> dict[int, AnchorRecord]:
        """Stored anchors: notarization id -> record (of ``collection`` / these ids)."""
        a, n = _anchors.c, _notarizations.c
        query = select(_anchors).join(_notarizations, a.notarization_id == n.id)
        if collection is not None:
            query = query.where(n.collection == collection)
        out: dict[int, AnchorRecord] = {}
        ids = None if notarization_ids is None else sorted(set(notarization_ids))
        with self._engine.connect() as conn:
            for chunk in [None] if ids is None else _chunks(ids, _IN_CHUNK):
                chunk_query = query if chunk is None else query.where(a.notarization_id.in_(chunk))
                for row in conn.execute(chunk_query.order_by(a.notarization_id)):
                    out[row.notarization_id] = _anchor_record(row._mapping)
        return out

    # -- runs and reports ------------------------------------------------------------------

    def start_run(self, flow: str, *, parameters: Mapping[str, Any] | None = None) -> int:
        """Record the start of a flow run; returns the run id."""
        values = {"flow": flow, "status": "running", "started_at": self._now()}
        values["parameters"] = dict(parameters) if parameters is not None else None
        with self._engine.begin() as conn:
            return int(
                conn.execute(insert(_runs).values(values).returning(_runs.c.id)).scalar_one()
            )

    def finish_run(
        self, run_id: int, *, counts: Mapping[str, Any], status: RunStatus = "completed"
    ) -> None:
        """Record the end of a run with its counts (JSON object, e.g. ``{"published": 12}``).

        Raises:
            KeyError: no run with that id.
        """
        values = {"finished_at": self._now(), "counts": dict(counts), "status": status}
        with self._engine.begin() as conn:
            result = conn.execute(update(_runs).where(_runs.c.id == run_id).values(values))
            if result.rowcount != 1:
                raise KeyError(f"no run {run_id}")

    def run(self, run_id: int) -> dict[str, Any] | None:
        """One run as a dict (id, flow, status, started_at, finished_at, parameters, counts)."""
        with self._engine.connect() as conn:
            row = conn.execute(select(_runs).where(_runs.c.id == run_id)).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["started_at"] = _aware(out["started_at"])
        out["finished_at"] = _aware(out["finished_at"])
        return out

    def summary(self, collection: str | None = None) -> dict[str, int]:
        """Count of notarizations per stage (every stage of ``ALL_STAGES`` present, 0 if none)."""
        n = _notarizations.c
        query = select(n.stage, func.count()).group_by(n.stage)
        if collection is not None:
            query = query.where(n.collection == collection)
        counts: dict[str, int] = dict.fromkeys(ALL_STAGES, 0)
        with self._engine.connect() as conn:
            for stage, count in conn.execute(query):
                counts[stage] = int(count)
        return counts

    def receipt_count(self, collection: str | None = None) -> int:
        """How many notarizations (of ``collection``) have a verified receipt stored."""
        n, r = _notarizations.c, _receipts.c
        query = select(func.count()).select_from(
            _receipts.join(_notarizations, r.notarization_id == n.id)
        )
        if collection is not None:
            query = query.where(n.collection == collection)
        with self._engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    # -- internals -------------------------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), tz=UTC)

    def _advance(
        self,
        conn: Connection,
        changes: Mapping[int, Mapping[str, Any]],
        stage: Stage,
        *,
        details: Mapping[int, Mapping[str, Any] | None] | None = None,
    ) -> int:
        """Move rows (id -> extra column values) forward to ``stage``; log one event each."""
        now = self._now()
        movable = _movable_ids(conn, list(changes), stage)
        if not movable:
            return 0
        keys = sorted({k for values in changes.values() for k in values})
        fixed = {"stage": stage, "updated_at": now, _STAGE_TIME_COLUMN[stage]: now, "error": None}
        per_row: dict[str, Any] = {k: bindparam(f"p_{k}") for k in keys}
        earlier = STAGE_ORDER[: STAGE_ORDER.index(stage)]
        stmt = update(_notarizations).where(
            _notarizations.c.id == bindparam("p_id"),
            or_(*[_notarizations.c.stage == s for s in earlier]),  # no IN: executemany
        )
        params = [{"p_id": i} | {f"p_{k}": changes[i].get(k) for k in keys} for i in movable]
        conn.execute(stmt.values(**fixed, **per_row), params)
        evts = [(i, stage, dict((details or {}).get(i) or {}) or None) for i in movable]
        _append_events(conn, evts, at=now)
        return len(movable)


# -- helpers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Statements:
    """The batch INSERTs, built once per dialect and run with a list of parameter dicts.

    Executed that way (executemany), SQLAlchemy compiles each statement once and sends the
    rows in pages ("insertmanyvalues", RETURNING included); a multi-row ``.values(rows)``
    statement is compiled anew for every batch, which cost ~10x the database's own time.
    """

    upsert_documents: Any
    add_notarizations: Any
    save_receipts: Any
    record_anchors: Any


@functools.cache
def _statements(dialect: str) -> _Statements:
    dialect_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    docs = dialect_insert(_documents)
    notarizations = dialect_insert(_notarizations)
    receipts = dialect_insert(_receipts)
    anchors = dialect_insert(_anchors)
    n = _notarizations.c
    return _Statements(
        upsert_documents=docs.on_conflict_do_update(
            index_elements=["source", "path", "sha256"],
            set_={
                "last_seen_at": docs.excluded.last_seen_at,
                "size_bytes": docs.excluded.size_bytes,
            },
        ),
        add_notarizations=notarizations.on_conflict_do_nothing(
            index_elements=["chain_id", "sha256"]
        ).returning(n.id, n.chain_id, n.sha256),
        save_receipts=receipts.on_conflict_do_nothing(index_elements=["notarization_id"]).returning(
            _receipts.c.id
        ),
        record_anchors=anchors.on_conflict_do_update(
            index_elements=["notarization_id"],
            set_={k: anchors.excluded[k] for k in _ANCHOR_REFRESHED},
        ),
    )


def _hex(value: str) -> str:
    lowered = value.lower()
    if not _HEX64.fullmatch(lowered):
        raise ValueError(f"expected 64 hex characters, got {value!r}")
    return lowered


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@overload
def _aware(value: datetime) -> datetime: ...
@overload
def _aware(value: None) -> None: ...
def _aware(value: datetime | None) -> datetime | None:
    """Normalize to aware UTC (SQLite returns naive UTC values, PostgreSQL the session's zone)."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _document_ids(
    conn: Connection, source: str, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    wanted = set(keys)
    hashes = sorted({h for _p, h in wanted})
    d = _documents.c
    found: dict[tuple[str, str], int] = {}
    for chunk in _chunks(hashes, _IN_CHUNK):
        query = select(d.id, d.path, d.sha256).where(d.source == source, d.sha256.in_(chunk))
        for row in conn.execute(query):
            if (row.path, row.sha256) in wanted:
                found[(row.path, row.sha256)] = row.id
    return found


def _ids_by_entry_hash(conn: Connection, hashes: set[str]) -> dict[int, str]:
    n = _notarizations.c
    found: dict[int, str] = {}
    for chunk in _chunks(sorted(hashes), _IN_CHUNK):
        for row in conn.execute(select(n.id, n.entry_hash).where(n.entry_hash.in_(chunk))):
            found[row.id] = row.entry_hash
    return found


def _current_stages(conn: Connection, ids: Sequence[int]) -> dict[int, str]:
    n = _notarizations.c
    stages: dict[int, str] = {}
    for chunk in _chunks(sorted(set(ids)), _IN_CHUNK):
        for row in conn.execute(select(n.id, n.stage).where(n.id.in_(chunk))):
            stages[row.id] = row.stage
    return stages


def _movable_ids(conn: Connection, ids: Sequence[int], stage: Stage) -> list[int]:
    """Ids whose current stage is before ``stage`` (failed rows never move)."""
    target = STAGE_ORDER.index(stage)
    current = _current_stages(conn, ids)
    return sorted(
        i for i, s in current.items() if s in STAGE_ORDER and STAGE_ORDER.index(s) < target
    )


def _live_ids(conn: Connection, ids: Sequence[int]) -> list[int]:
    return sorted(i for i, s in _current_stages(conn, ids).items() if s != "failed")


def _append_events(
    conn: Connection, events: Sequence[tuple[int, str, Mapping[str, Any] | None]], *, at: datetime
) -> None:
    if not events:
        return
    rows = [
        {"notarization_id": i, "stage": stage, "at": at, "details": details}
        for i, stage, details in events
    ]
    conn.execute(insert(_events), rows)


def _row_query() -> Any:
    n, d = _notarizations, _documents
    return select(n, d.c.source, d.c.path, d.c.size_bytes).join(d, n.c.document_id == d.c.id)


def _notarization_row(mapping: Mapping[Any, Any]) -> NotarizationRow:
    values = {f.name: mapping[f.name] for f in fields(NotarizationRow)}
    for name in _ROW_TIMES:
        values[name] = _aware(values[name])
    return NotarizationRow(**values)


def _receipt_values(notarization_id: int, record: ReceiptRecord) -> dict[str, Any]:
    return {
        "notarization_id": notarization_id,
        "entry_hash": _hex(record.entry_hash),
        "merkle_branch": record.merkle_branch,
        "entry_block_keymr": _hex(record.entry_block_keymr),
        "directory_block_keymr": _hex(record.directory_block_keymr),
        "directory_block_height": record.directory_block_height,
        "raw": record.raw,
        "verified_at": record.verified_at,
    }


_ANCHOR_REFRESHED = (
    "dblock_height",
    "dblock_keymr",
    "anchor_block_hash",
    "transaction_id",
    "confirmations",
    "raw",
    "verified_at",
)
_ANCHOR_EVENT_KEYS = ("dblock_height", "anchor_block_hash", "transaction_id", "confirmations")


def _anchor_values(record: AnchorRecord) -> dict[str, Any]:
    if record.dblock_height < 0 or record.confirmations < 0:
        raise ValueError(f"negative height or confirmations in {record!r}")
    return {
        "dblock_height": int(record.dblock_height),
        "dblock_keymr": _hex(record.dblock_keymr),
        "anchor_block_hash": _hex(record.anchor_block_hash),
        "transaction_id": _hex(record.transaction_id),
        "confirmations": int(record.confirmations),
        "raw": dict(record.raw),
        "verified_at": record.verified_at,
    }


def _anchored_rows(
    conn: Connection, by_height: Mapping[int, Mapping[str, Any]], collection: str | None
) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """Rows at ``ledger``/``anchor`` in the anchored blocks: (id -> stage, anchor values)."""
    n = _notarizations.c
    stages: dict[int, str] = {}
    values: list[dict[str, Any]] = []
    for chunk in _chunks(sorted(by_height), _IN_CHUNK):
        query = select(n.id, n.stage, n.dblock_height, n.dblock_keymr).where(
            n.stage.in_(["ledger", "anchor"]), n.dblock_height.in_(chunk)
        )
        if collection is not None:
            query = query.where(n.collection == collection)
        for row in conn.execute(query.order_by(n.id)):
            anchor = by_height[row.dblock_height]
            if row.dblock_keymr == anchor["dblock_keymr"]:
                stages[row.id] = row.stage
                values.append({"notarization_id": row.id, **anchor})
    return stages, values


def _anchor_record(mapping: Mapping[Any, Any]) -> AnchorRecord:
    values = {f.name: mapping[f.name] for f in fields(AnchorRecord)}
    values["verified_at"] = _aware(values["verified_at"])
    return AnchorRecord(**values)


def _proof_record(mapping: Mapping[Any, Any]) -> ProofRecord:
    receipt = None
    if mapping["r_id"] is not None:
        names = [f.name for f in fields(ReceiptRecord)]
        values = {name: mapping[f"r_{name}"] for name in names}
        values["verified_at"] = _aware(values["verified_at"])
        receipt = ReceiptRecord(**values)
    return ProofRecord(_notarization_row(mapping), receipt)
