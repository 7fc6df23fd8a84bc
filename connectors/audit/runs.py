"""The audit store's flow runs and counts: a row per run, stage counts for reports.

``AuditStore.runs`` (``connectors.audit.store``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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

__all__ = ["Runs"]


class Runs(Repository):
    """Flow runs (start, finish, read back) and counts per stage and of receipts."""

    def start(self, flow: str, *, parameters: Mapping[str, Any] | None = None) -> int:
        """Record the start of a flow run; returns the run id."""
        values = {"flow": flow, "status": "running", "started_at": self._now()}
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

    def get(self, run_id: int) -> dict[str, Any] | None:
        """One run as a dict (id, flow, status, started_at, finished_at, parameters, counts)."""
        with self._engine.connect() as conn:
            row = conn.execute(select(runs_table).where(runs_table.c.id == run_id)).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["started_at"] = aware_utc(out["started_at"])
        out["finished_at"] = aware_utc(out["finished_at"])
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
