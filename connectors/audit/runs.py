"""The audit store's flow runs and counts: a row per run, stage counts for reports.

``AuditStore.runs`` (``connectors.audit.store``).

A run records the host and process that run it and renews its heartbeat while it runs
(``heartbeat``, from a thread of the flow: ``flows.run_heartbeat``). A run killed before
it could finish stays ``running``; the next run to start (any flow, ``collect`` included)
marks it ``crashed`` (``close_crashed``): on this host, when its process is gone; on any
host, when its heartbeat (or its start, for a row without one) is older than the stale
limit. ``crashed`` lists them for reports.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, select, update

from connectors.audit.records import ALL_STAGES, RunStatus, Stage
from connectors.audit.repository import Repository
from connectors.audit.sql import (
    IN_CHUNK,
    aware_utc,
    chunks,
    members_table,
    notarizations_table,
    receipts_table,
    runs_table,
)

__all__ = ["DEFAULT_RUN_STALE_S", "Runs", "process_alive"]

logger = logging.getLogger(__name__)

#: A running run whose heartbeat is older than this (seconds) is taken for crashed.
DEFAULT_RUN_STALE_S = 300.0


def process_alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this host (``kill(pid, 0)``; one owned by
    another user counts: ``EPERM``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Runs(Repository):
    """Flow runs (start, finish, read back) and counts per stage and of receipts."""

    def start(
        self,
        flow: str,
        *,
        parameters: Mapping[str, Any] | None = None,
        stale_after_s: float = DEFAULT_RUN_STALE_S,
    ) -> int:
        """Close the runs that crashed (``close_crashed``), then record the start of a
        flow run, by this host and process, with a first heartbeat; returns the run id."""
        self.close_crashed(stale_after_s=stale_after_s)
        now = self._now()
        values = {"flow": flow, "status": "running", "started_at": now, "heartbeat_at": now}
        values |= {"host": socket.gethostname()[:255], "pid": os.getpid()}
        values["parameters"] = dict(parameters) if parameters is not None else None
        with self._engine.begin() as conn:
            return int(
                conn.execute(
                    insert(runs_table).values(values).returning(runs_table.c.id)
                ).scalar_one()
            )

    def finish(
        self, run_id: int, *, counts: Mapping[str, Any], status: RunStatus = "completed"
    ) -> None:
        """Record the end of a run with its counts (JSON object, e.g. ``{"published": 12}``).

        Raises:
            KeyError: no run with that id.
        """
        values = {"finished_at": self._now(), "counts": dict(counts), "status": status}
        with self._engine.begin() as conn:
            result = conn.execute(
                update(runs_table).where(runs_table.c.id == run_id).values(values)
            )
            if result.rowcount != 1:
                raise KeyError(f"no run {run_id}")

    def heartbeat(self, run_id: int) -> None:
        """Say that the run is alive (``heartbeat_at`` = now), while it is ``running``."""
        r = runs_table.c
        with self._engine.begin() as conn:
            conn.execute(
                update(runs_table)
                .where(r.id == run_id, r.status == "running")
                .values(heartbeat_at=self._now())
            )

    def close_crashed(
        self,
        *,
        stale_after_s: float = DEFAULT_RUN_STALE_S,
        is_alive: Callable[[int], bool] = process_alive,
    ) -> list[int]:
        """Mark ``crashed`` every ``running`` run whose process is gone: on this host when
        ``is_alive(pid)`` is false, on any host when its last heartbeat (its start, if it
        has none) is more than ``stale_after_s`` seconds old. The reason is kept in its
        ``counts`` (``{"crashed": "..."}``); a run another caller closed first is left.

        Returns:
            the ids of the runs this call closed.
        """
        r = runs_table.c
        now = self._now()
        host = socket.gethostname()[:255]
        with self._engine.connect() as conn:
            running = conn.execute(
                select(r.id, r.host, r.pid, r.started_at, r.heartbeat_at).where(
                    r.status == "running"
                )
            ).all()
        closed = []
        for row in running:
            reason = _crash_reason(row, now=now, stale_after_s=stale_after_s)
            ours = row.host == host and row.pid is not None and row.pid != os.getpid()
            if reason is None and ours and not is_alive(row.pid):
                reason = f"process {row.pid} on {host} is gone"
            if reason is not None and self._mark_crashed(row.id, reason, now):
                logger.warning("run %d marked crashed: %s", row.id, reason)
                closed.append(int(row.id))
        return closed

    def _mark_crashed(self, run_id: int, reason: str, now: datetime) -> bool:
        r = runs_table.c
        values = {"status": "crashed", "finished_at": now, "counts": {"crashed": reason}}
        with self._engine.begin() as conn:
            result = conn.execute(
                update(runs_table).where(r.id == run_id, r.status == "running").values(values)
            )
        return result.rowcount == 1

    def crashed(
        self, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[dict[str, Any]]:
        """The runs marked ``crashed`` that started in ``[since, until)``, oldest first:
        ``{id, flow, host, pid, started_at, heartbeat_at, finished_at, reason}`` (times
        aware UTC; ``finished_at``: when it was found crashed)."""
        r = runs_table.c
        query = select(runs_table).where(r.status == "crashed").order_by(r.id)
        if since is not None:
            query = query.where(r.started_at >= since)
        if until is not None:
            query = query.where(r.started_at < until)
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [_crashed_row(row) for row in rows]

    def get(self, run_id: int) -> dict[str, Any] | None:
        """One run as a dict (id, flow, status, started_at, finished_at, parameters, counts)."""
        with self._engine.connect() as conn:
            row = conn.execute(select(runs_table).where(runs_table.c.id == run_id)).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["started_at"] = aware_utc(out["started_at"])
        out["finished_at"] = aware_utc(out["finished_at"])
        out["heartbeat_at"] = aware_utc(out["heartbeat_at"])
        return out

    def summary(self, collection: str | None = None) -> dict[str, int]:
        """Count of notarized documents per stage (every stage of ``ALL_STAGES`` present, 0
        if none): a batch counts its members, each at the batch's stage."""
        n, m = notarizations_table.c, members_table.c
        own = select(n.stage, func.count()).where(n.kind != "batch").group_by(n.stage)
        members = (
            select(n.stage, func.count())
            .select_from(members_table.join(notarizations_table, m.batch_id == n.id))
            .group_by(n.stage)
        )
        if collection is not None:
            own = own.where(n.collection == collection)
            members = members.where(n.collection == collection)
        counts: dict[str, int] = dict.fromkeys(ALL_STAGES, 0)
        with self._engine.connect() as conn:
            for query in (own, members):
                for stage, count in conn.execute(query):
                    counts[stage] += int(count)
        return counts

    def receipt_count(self, collection: str | None = None) -> int:
        """How many notarized documents (of ``collection``) have a verified receipt stored
        (a batch's receipt counts once per member)."""
        n, r, m = notarizations_table.c, receipts_table.c, members_table.c
        with_receipt = receipts_table.join(notarizations_table, r.notarization_id == n.id)
        own = select(func.count()).select_from(with_receipt).where(n.kind != "batch")
        members = select(func.count()).select_from(
            with_receipt.join(members_table, m.batch_id == n.id)
        )
        if collection is not None:
            own = own.where(n.collection == collection)
            members = members.where(n.collection == collection)
        with self._engine.connect() as conn:
            return sum(int(conn.execute(q).scalar_one()) for q in (own, members))

    def progress(self, notarization_ids: Iterable[int]) -> dict[int, tuple[Stage, bool]]:
        """Where these notarizations are: id -> (stage, whether a verified receipt is
        stored); unknown ids are absent. A run's own counts, where ``summary`` and
        ``receipt_count`` count a whole collection."""
        n, r = notarizations_table.c, receipts_table.c
        has_receipt = select(r.id).where(r.notarization_id == n.id).exists()
        out: dict[int, tuple[Stage, bool]] = {}
        with self._engine.connect() as conn:
            for chunk in chunks(sorted(set(notarization_ids)), IN_CHUNK):
                query = select(n.id, n.stage, has_receipt.label("has_receipt")).where(
                    n.id.in_(chunk)
                )
                for row in conn.execute(query):
                    out[int(row.id)] = (row.stage, bool(row.has_receipt))
        return out


def _crash_reason(row: Any, *, now: datetime, stale_after_s: float) -> str | None:
    """Why a running run is taken for crashed by its heartbeat alone, or ``None``."""
    last = aware_utc(row.heartbeat_at or row.started_at)
    if last is not None and now - last > timedelta(seconds=stale_after_s):
        return f"no heartbeat from {row.host or 'its host'} since {last.isoformat()}"
    return None


def _crashed_row(row: Any) -> dict[str, Any]:
    out = {k: getattr(row, k) for k in ("id", "flow", "host", "pid")}
    for key in ("started_at", "heartbeat_at", "finished_at"):
        out[key] = aware_utc(getattr(row, key))
    out["reason"] = (row.counts or {}).get("crashed", "")
    return out
