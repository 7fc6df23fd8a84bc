"""The one way a notarization moves forward, shared by the repositories of the audit store.

Stage life cycle (``STAGE_ORDER``)::

    pending -> published -> multi_az -> ledger -> anchor          (forward only; skips allowed)
       any stage ----------------------------------> failed       (terminal, mark_failed)

Every stage change appends a ``stage_events`` row in the same transaction (``advance``).
The functions run on a connection whose transaction the caller owns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, update
from sqlalchemy.engine import Connection

from connectors.audit.records import STAGE_ORDER, Stage
from connectors.audit.sql import IN_CHUNK, chunks, events_table, notarizations_table

__all__ = ["STAGE_TIME_COLUMN", "advance", "append_events", "move_forward", "record_ledger"]

#: The ``notarizations`` column that records when a row reached each stage.
STAGE_TIME_COLUMN = {
    "published": "published_at",
    "multi_az": "multi_az_at",
    "ledger": "ledger_at",
    "anchor": "anchored_at",
}


def advance(
    conn: Connection,
    changes: Mapping[int, Mapping[str, Any]],
    stage: Stage,
    *,
    at: datetime,
    details: Mapping[int, Mapping[str, Any] | None] | None = None,
) -> int:
    """Move rows (id -> extra column values) forward to ``stage`` at ``at``; log one event
    each; returns how many moved.

    Which rows move is decided by one conditional ``UPDATE ... RETURNING`` per chunk of
    ids, not by reading the stages first: when two processes move the same rows at
    once (two workers sweeping one collection), the second one's update finds them
    moved already (PostgreSQL re-checks the condition once the first commits), so each
    move is logged once. Reading first logged it twice.
    """
    groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
    for i, change in changes.items():
        groups.setdefault(tuple(sorted(change.items())), []).append(i)
    if len(groups) * 4 <= len(changes):
        # Few distinct values (a page of entries in one or two directory blocks): one
        # UPDATE per group sets them with the stage, instead of one row at a time.
        moved = sorted(
            i
            for key, ids in groups.items()
            for i in move_forward(conn, ids, stage, at=at, values=dict(key))
        )
        keys = []
    else:
        moved = move_forward(conn, list(changes), stage, at=at)
        keys = sorted({k for i in moved for k in changes[i]})
    if keys:  # the moved rows are this transaction's now: no stage condition needed
        n = notarizations_table.c
        stmt = update(notarizations_table).where(n.id == bindparam("p_id"))
        per_row: dict[str, Any] = {k: bindparam(f"p_{k}") for k in keys}
        params = [{"p_id": i} | {f"p_{k}": changes[i].get(k) for k in keys} for i in moved]
        conn.execute(stmt.values(**per_row), params)
    evts = [(i, stage, dict((details or {}).get(i) or {}) or None) for i in moved]
    append_events(conn, evts, at=at)
    return len(moved)


def record_ledger(
    conn: Connection,
    by_hash: Mapping[str, tuple[int, str]],
    ids: Mapping[int, str],
    *,
    at: datetime,
) -> int:
    """Move entries to ``ledger`` with the directory block that holds them.

    Args:
        by_hash: entry hash (checked hex) -> (directory block height, KeyMR hex).
        ids: notarization id -> entry hash of the entries of ``by_hash``.
        at: the time of the move.

    Returns:
        how many rows moved.
    """
    changes: dict[int, dict[str, Any]] = {}
    details: dict[int, dict[str, Any] | None] = {}
    for i, h in ids.items():
        height, keymr = by_hash[h]
        changes[i] = {"dblock_height": height, "dblock_keymr": keymr}
        details[i] = {"dblock_height": height, "dblock_keymr": keymr}
    return advance(conn, changes, "ledger", at=at, details=details)


def move_forward(
    conn: Connection,
    ids: Sequence[int],
    stage: Stage,
    *,
    at: datetime,
    values: Mapping[str, Any] | None = None,
) -> list[int]:
    """Move the rows of ``ids`` whose stage is before ``stage`` to it (stage time and
    ``updated_at`` set to ``at``, error cleared, and the columns of ``values`` set, the
    same for every row); returns the ids moved, sorted. Failed rows never move. One
    ``UPDATE ... RETURNING`` per chunk, so the rows moved are exactly those this statement
    changed, also when another transaction moves them at once."""
    n = notarizations_table.c
    earlier = list(STAGE_ORDER[: STAGE_ORDER.index(stage)])
    values = {**(values or {}), "stage": stage, "updated_at": at}
    values |= {STAGE_TIME_COLUMN[stage]: at, "error": None}
    moved: list[int] = []
    for chunk in chunks(sorted(set(ids)), IN_CHUNK):
        stmt = update(notarizations_table).where(n.id.in_(chunk), n.stage.in_(earlier))
        moved += conn.scalars(stmt.values(**values).returning(n.id)).all()
    return sorted(moved)


def append_events(
    conn: Connection, events: Sequence[tuple[int, str, Mapping[str, Any] | None]], *, at: datetime
) -> None:
    """Insert ``stage_events`` rows ``(notarization id, stage, details)``, all at ``at``."""
    if not events:
        return
    rows = [
        {"notarization_id": i, "stage": stage, "at": at, "details": details}
        for i, stage, details in events
    ]
    conn.execute(insert(events_table), rows)
