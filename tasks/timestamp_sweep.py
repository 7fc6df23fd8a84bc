"""The independent timestamps sweep: record each anchored block's timestamps as they arrive.

Plain functions (no Prefect). The anchoring service asks the TSAs and calendars itself
and keeps what they answer (docs/opentimestamps.md); this sweep reads it for every
directory block holding anchored notarizations whose timestamps are not final
(``AuditStore.timestamps.awaiting``: a TSA still waited for, or an OpenTimestamps proof
not yet attested in Bitcoin) through ``anchor-timestamps``, and records what the report
shows: the tokens' TSAs and times, and the OpenTimestamps state. The ``anchor`` stage
stays the proof-of-work chain's; these are shown beside it and never move a stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from connectors.anchor import AnchorClient
from connectors.audit import AuditStore, BlockTimestamps

__all__ = ["TimestampSweep", "sweep_timestamps"]


@dataclass
class TimestampSweep:
    """Blocks asked, rows recorded, of which final; answers that could not be read."""

    blocks_asked: int = 0
    recorded: int = 0
    final: int = 0
    errors: list[str] = field(default_factory=list)


def sweep_timestamps(
    store: AuditStore, anchor: AnchorClient, *, collection: str | None = None, limit: int = 200
) -> TimestampSweep:
    """Record the timestamps of up to ``limit`` anchored blocks whose timestamps are not
    final (of ``collection``'s notarizations, if given).

    A service without ``anchor-timestamps`` records nothing.

    Raises:
        ConnectorError: the anchoring service could not be reached (the caller retries).
    """
    outcome = TimestampSweep()
    records = []
    for height, keymr in store.timestamps.awaiting(collection=collection, limit=limit):
        outcome.blocks_asked += 1
        answer = anchor.timestamps(height)
        if answer is None:
            return outcome
        try:
            record = BlockTimestamps.from_answer(answer)
        except ValueError as exc:
            outcome.errors.append(f"timestamps of directory block {height}: {exc}")
            continue
        if record.dblock_keymr not in (None, keymr):
            outcome.errors.append(f"timestamps of directory block {height} are of another root")
            continue
        records.append(record)
    outcome.recorded = store.timestamps.record(records)
    outcome.final = sum(r.final for r in records)
    return outcome
