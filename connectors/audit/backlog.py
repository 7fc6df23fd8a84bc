"""What the audit store still waits for: notarizations not anchored yet, and the oldest one.

``read_unanchored(engine)`` counts the notarizations per stage short of ``anchor``
(``pending``, ``published``, ``multi_az``, ``ledger``; ``failed`` ones wait for nothing)
and finds the creation time of the oldest of them, in one grouped query over the
``(stage, collection)`` index: cheap enough for each metrics scrape and readiness probe
of ``notary collect --listen``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, func, select

from connectors.audit.records import STAGE_ORDER, Stage
from connectors.audit.sql import aware_utc, notarizations_table

__all__ = ["UNANCHORED_STAGES", "Unanchored", "read_unanchored"]

#: Stages of a notarization that still waits for its anchor.
UNANCHORED_STAGES: tuple[Stage, ...] = tuple(s for s in STAGE_ORDER if s != "anchor")


@dataclass(frozen=True)
class Unanchored:
    """Notarizations short of ``anchor``: ``waiting`` per stage (every stage of
    ``UNANCHORED_STAGES`` present), and the creation time of the oldest (aware UTC)."""

    waiting: dict[str, int]
    oldest_created_at: datetime | None

    @property
    def total(self) -> int:
        return sum(self.waiting.values())

    def oldest_age_s(self, now: datetime) -> float:
        """Seconds the oldest one has waited at ``now`` (aware), 0 without any."""
        if self.oldest_created_at is None:
            return 0.0
        return max(0.0, (now - self.oldest_created_at).total_seconds())


def read_unanchored(engine: Engine) -> Unanchored:
    """Read the unanchored notarizations (module docstring).

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the audit store cannot be read.
    """
    n = notarizations_table.c
    query = (
        select(n.stage, func.count(), func.min(n.created_at))
        .where(n.stage.in_(UNANCHORED_STAGES))
        .group_by(n.stage)
    )
    waiting: dict[str, int] = {stage: 0 for stage in UNANCHORED_STAGES}
    oldest: datetime | None = None
    with engine.connect() as conn:
        for stage, count, created in conn.execute(query):
            waiting[stage] = int(count)
            at = aware_utc(created)
            if at is not None and (oldest is None or at < oldest):
                oldest = at
    return Unanchored(waiting, oldest)
