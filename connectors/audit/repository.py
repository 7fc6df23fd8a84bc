"""What every repository of the audit store is built from: the engine, the clock and the
backend's dialect (``connectors.audit.dialect``).

Each repository (``Notarizations``, ``Batches``, ``Proofs``, ``Collections``, ``Runs``)
owns one aggregate of the audit tables and runs one transaction per public method;
``connectors.audit.store.AuditStore`` composes them over one engine.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from connectors.audit.dialect import Dialect, dialect_for
from ledger.core.clock import Clock, SystemClock

__all__ = ["Repository"]


class Repository:
    """The engine, clock and dialect a repository works with.

    Args:
        engine: an engine on the audit database (``connectors.audit.engine.build_engine``)
            whose schema is migrated.
        clock: source of time (``now()``: Unix seconds); stored times are aware UTC. The
            wall clock by default.

    Raises:
        ValueError: an engine on a backend other than SQLite or PostgreSQL.
    """

    def __init__(self, engine: Engine, *, clock: Clock | None = None) -> None:
        self._engine = engine
        self._clock = clock or SystemClock()
        self._dialect: Dialect = dialect_for(engine.dialect.name)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), tz=UTC)
