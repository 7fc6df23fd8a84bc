"""Writes given up: recorded where the caller looks, never back in the queue.

A write accepted with ``202`` that will not reach the ledger moves to stage ``failed``
(docs/rest-api.md §4), in one transaction with

* its ``write_failures`` row (reason, time, attempts, whether the node refused it for
  good): operations 5 and 8 to 11 show it as the ``failure`` object (docs/rest-api.md §3);
* its ``failed`` callback, queued when the write asked for any callback (parameters
  ``entry_hash``, ``reason`` and ``stage=failed``, docs/rest-api.md §6).

Three causes (``ledger.api.outbox.refusals``): the node refused the write itself (at once), a
transient error repeated ``submit_max_attempts`` times, or the write is an entry whose
chain's first entry failed (it can never be revealed): those not revealed yet fail with
the first entry, in the same transaction, and one accepted later fails when the
submitter meets it. Its state becomes ``failed`` too, so the submitter never picks it
again; nothing is deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Table, insert, select, update
from sqlalchemy.orm import Session

from ledger.api.db import Database
from ledger.api.models import CallbackRow, EntryRow, Stage, SubmitState, WriteFailure
from ledger.api.outbox.callbacks import callback_values

__all__ = [
    "CALLBACK_REASON_CHARS",
    "FailureInfo",
    "GiveUp",
    "REASON_CHARS",
    "adopt_legacy",
    "failure_of",
    "orphan_reason",
    "record_failures",
]

#: Longest reason kept (characters); the callback's ``reason`` parameter is shorter.
REASON_CHARS = 2000
#: Longest ``reason`` query parameter of a ``failed`` callback (characters).
CALLBACK_REASON_CHARS = 300
_IN_CHUNK = 500
#: Rows still before the ledger: the only ones a failure may move.
_LIVE = (Stage.ACCEPTED.value, Stage.MULTI_AZ.value)
_ENTRIES = cast(Table, EntryRow.__table__)
_FAILURES = cast(Table, WriteFailure.__table__)
_CALLBACKS = cast(Table, CallbackRow.__table__)
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GiveUp:
    """A write to give up: its ``entries.id``, why, after how many errors, and whether the
    node refused it for good (``WriteFailure.permanent``)."""

    row_id: int
    reason: str
    attempts: int
    permanent: bool


@dataclass(frozen=True)
class FailureInfo:
    """What a read shows of a failed write (``failed_at`` in Unix seconds, ``None`` for a
    write given up before failures were recorded)."""

    reason: str
    failed_at: float | None
    attempts: int


def record_failures(connection: Connection, give_ups: Sequence[GiveUp], *, now: float) -> int:
    """Move the writes of ``give_ups`` to stage ``failed`` in the caller's transaction
    (module docstring); rows already in a block or failed are left alone. A chain's first
    entry takes the chain's entries not yet revealed with it (``orphan_reason``).

    Returns:
        how many writes were given up, those entries included.
    """
    wanted = {g.row_id: g for g in give_ups}
    e, done = _ENTRIES.c, 0
    failed_chains: dict[str, str] = {}  # chain id -> reason of its first entry
    for chunk in _chunks(sorted(wanted)):
        query = select(
            e.id, e.entry_hash, e.chain_id, e.is_first, e.callback_url, e.callback_stages
        ).where(e.id.in_(chunk), e.stage.in_(_LIVE))
        rows = connection.execute(query).all()
        if not rows:
            continue
        moved = [wanted[r.id] for r in rows]
        connection.execute(
            update(_ENTRIES)
            .where(e.id.in_([g.row_id for g in moved]))
            .values(stage=Stage.FAILED.value, state=SubmitState.FAILED.value)
        )
        connection.execute(insert(_FAILURES), [_failure_values(g, now) for g in moved])
        callbacks = [c for r in rows if (c := _callback(r, wanted[r.id], now)) is not None]
        if callbacks:
            connection.execute(insert(_CALLBACKS), callbacks)
        failed_chains.update({r.chain_id: wanted[r.id].reason for r in rows if r.is_first})
        done += len(moved)
    if done:
        sample = "; ".join(g.reason for g in list(wanted.values())[:3])
        _log.warning("gave up %d accepted write(s), now at stage failed: %s", done, sample)
    if failed_chains:
        done += record_failures(connection, _unrevealed(connection, failed_chains), now=now)
    return done


def orphan_reason(first_reason: str) -> str:
    """The reason of an entry given up because its chain's first entry failed."""
    return f"the chain's first entry failed: {first_reason}"


def adopt_legacy(db: Database, *, now: float) -> int:
    """Move the rows a version before this one gave up (state ``failed``, stage still
    ``multi_az``) to stage ``failed``, with their last error as the reason. Once, at the
    worker's start: one indexed read; a write transaction only when there are such rows.
    Returns the writes given up (their chains' other entries included)."""
    with db.read() as session:
        give_ups = _legacy(session.connection())
    if not give_ups:
        return 0
    with db.transaction() as connection:
        return record_failures(connection, give_ups, now=now)


def _unrevealed(connection: Connection, chains: dict[str, str]) -> list[GiveUp]:
    """The entries of ``chains`` (chain id -> first entry's reason) not revealed yet."""
    e = _ENTRIES.c
    live_states = [SubmitState.PENDING.value, SubmitState.COMMITTED.value]
    give_ups: list[GiveUp] = []
    for chunk in _chunks(sorted(chains)):
        rows = connection.execute(
            select(e.id, e.chain_id, e.attempts).where(
                e.chain_id.in_(chunk), e.is_first.is_(False), e.state.in_(live_states)
            )
        )
        give_ups.extend(
            GiveUp(r.id, orphan_reason(chains[r.chain_id]), r.attempts, permanent=False)
            for r in rows
        )
    return give_ups


def failure_of(session: Session, row: EntryRow) -> FailureInfo | None:
    """The failure of ``row`` for the read fields, ``None`` unless it is at ``failed``."""
    if row.stage != Stage.FAILED.value:
        return None
    found = session.get(WriteFailure, row.id)
    if found is None:
        return FailureInfo(row.last_error or "given up", None, row.attempts)
    return FailureInfo(found.reason, found.failed_at, found.attempts)


def _legacy(connection: Connection) -> list[GiveUp]:
    e = _ENTRIES.c
    rows = connection.execute(
        select(e.id, e.last_error, e.attempts).where(
            e.state == SubmitState.FAILED.value, e.stage.in_(_LIVE)
        )
    )
    return [
        GiveUp(r.id, f"gave up after {r.attempts} attempts: {r.last_error}", r.attempts, False)
        for r in rows
    ]


def _failure_values(give_up: GiveUp, now: float) -> dict[str, Any]:
    return {
        "entry_id": give_up.row_id,
        "reason": give_up.reason[:REASON_CHARS],
        "failed_at": now,
        "attempts": give_up.attempts,
        "permanent": give_up.permanent,
    }


def _callback(row: Any, give_up: GiveUp, now: float) -> dict[str, Any] | None:
    params = {"entry_hash": row.entry_hash, "reason": give_up.reason[:CALLBACK_REASON_CHARS]}
    return callback_values(row, Stage.FAILED, params, now=now)


def _chunks(items: Sequence[Any]) -> Sequence[Sequence[Any]]:
    return [items[i : i + _IN_CHUNK] for i in range(0, len(items), _IN_CHUNK)]
