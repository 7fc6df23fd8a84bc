"""What an audit report reads (``tasks.report``): the period's records from the audit
store (``load_report_data``, all at once; ``tasks.report_stream`` reads page by page),
the overdue limits per stage (``OverdueThresholds``) and the period's bounds
(``parse_moment``: dates, date-times and relative times such as ``-7d``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta

from connectors.audit import (
    AnchorRecord,
    AuditStore,
    BatchRecord,
    BlockTimestamps,
    ProofRecord,
    StageEventRecord,
)

__all__ = [
    "OverdueThresholds",
    "ReportData",
    "all_batches",
    "as_utc",
    "load_report_data",
    "parse_moment",
]


@dataclass(frozen=True)
class OverdueThresholds:
    """Longest time, in seconds, a notarization may stay at a stage; ``None``: no limit.

    ``ledger_s`` is the wait for the anchor (rows at ``ledger`` are in a directory block).
    """

    pending_s: float | None = 3600.0
    published_s: float | None = 3600.0
    multi_az_s: float | None = 3600.0
    ledger_s: float | None = 6 * 3600.0

    @classmethod
    def from_mapping(cls, limits: Mapping[str, float | None]) -> OverdueThresholds:
        """From ``{stage: seconds}`` (``pending``, ``published``, ``multi_az``, ``ledger``);
        stages not named keep their default.

        Raises:
            ValueError: an unknown stage name or a negative limit.
        """
        known = {f.name.removesuffix("_s") for f in fields(cls)}
        unknown = set(limits) - known
        if unknown:
            raise ValueError(
                f"no overdue limit for stage(s) {sorted(unknown)}; use {sorted(known)}"
            )
        if any(v is not None and v < 0 for v in limits.values()):
            raise ValueError("overdue limits must be >= 0 seconds")
        return cls(**{f"{k}_s": None if v is None else float(v) for k, v in limits.items()})

    def limit_s(self, stage: str) -> float | None:
        """The limit for rows currently at ``stage`` (``None`` for anchor and failed)."""
        return getattr(self, f"{stage}_s", None)


@dataclass(frozen=True)
class ReportData:
    """What a report is made of, read from the audit store in one go."""

    proofs: list[ProofRecord]
    events: dict[int, list[StageEventRecord]]
    anchors: dict[int, AnchorRecord]
    batches: list[BatchRecord] = field(default_factory=list)
    #: The independent timestamps of the records' directory blocks, by height.
    timestamps: dict[int, BlockTimestamps] = field(default_factory=dict)
    collection: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def load_report_data(
    store: AuditStore,
    *,
    collection: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> ReportData:
    """Notarizations created in ``[since, until)`` (of ``collection``) with their receipts,
    stage events, anchors and their directory blocks' timestamps."""
    proofs = store.proofs.records(collection=collection, since=since, until=until)
    ids = [p.notarization.id for p in proofs]
    batch_ids = {p.notarization.id for p in proofs if p.notarization.is_member}
    return ReportData(
        proofs=proofs,
        events=store.notarizations.stage_events(ids),
        anchors=store.proofs.anchors(notarization_ids=ids),
        batches=[b for b in all_batches(store, collection) if b.id in batch_ids],
        timestamps=store.timestamps.of_blocks(_heights(proofs)),
        collection=collection,
        since=since,
        until=until,
    )


def _heights(proofs: list[ProofRecord]) -> set[int]:
    return {h for p in proofs if (h := p.notarization.dblock_height) is not None}


def all_batches(store: AuditStore, collection: str | None) -> list[BatchRecord]:
    """Every batch (of ``collection``; ``None``: all), by id, read a page at a time."""
    out: list[BatchRecord] = []
    while page := store.batches.read(collection=collection, after_id=out[-1].id if out else 0):
        out += page
    return out


def parse_moment(
    text: str | datetime | None, *, end_of_day: bool = False, now: datetime | None = None
) -> datetime | None:
    """A moment as an aware UTC datetime (naive means UTC).

    Accepted: ``YYYY-MM-DD`` (its midnight, or the next midnight with ``end_of_day``, so an
    ``until`` date includes that whole day), an ISO 8601 date-time, or a time before
    ``now`` (default: the wall clock) such as ``-7d``, ``-12h`` or ``-30m`` (for scheduled
    reports).

    Raises:
        ValueError: none of these.
    """
    if text is None or isinstance(text, datetime):
        return None if text is None else as_utc(text)
    value = text.strip()
    relative = _RELATIVE.fullmatch(value)
    if relative:
        amount = float(relative.group(1)) * _UNIT_S[relative.group(2)]
        return as_utc(now or datetime.now(UTC)) - timedelta(seconds=amount)
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return moment + timedelta(days=1) if end_of_day else moment
        return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError as exc:
        raise ValueError(f"not a date (YYYY-MM-DD), ISO date-time or -<n>d/h/m: {text!r}") from exc


_RELATIVE = re.compile(r"-(\d+(?:\.\d+)?)([dhm])")
_UNIT_S = {"d": 86400.0, "h": 3600.0, "m": 60.0}


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC (a naive one is taken as UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
