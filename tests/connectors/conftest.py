"""Fixtures shared by the audit store's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.audit import AuditStore
from ledger.core.clock import ManualClock
from tests.harness.postgres import PG_URL, fresh_schema


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Connection arguments of a fresh, empty audit store on each backend: ``url``, and
    for PostgreSQL a ``schema`` of its own, dropped afterwards."""
    if request.param == "sqlite":
        yield {"url": f"sqlite:///{tmp_path / 'audit' / 'audit.db'}"}
        return
    request.getfixturevalue("postgres_url")
    with fresh_schema(prefix="test_audit") as schema:
        yield {"url": PG_URL, "schema": schema}


@pytest.fixture
def store(backend: dict[str, str], clock: ManualClock) -> Iterator[AuditStore]:
    """An audit store on ``backend`` keeping time by ``clock`` (each module defines its
    ``clock`` fixture, at the start time its assertions use)."""
    with AuditStore(backend["url"], clock=clock, schema=backend.get("schema")) as audit:
        yield audit
