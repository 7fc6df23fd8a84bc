"""Fixtures shared by the audit store's tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.harness.postgres import PG_URL


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Connection arguments of a fresh, empty audit store on each backend: ``url``, and
    for PostgreSQL a ``schema`` of its own, dropped afterwards."""
    if request.param == "sqlite":
        yield {"url": f"sqlite:///{tmp_path / 'audit' / 'audit.db'}"}
        return
    request.getfixturevalue("postgres_url")
    schema = f"test_audit_{uuid.uuid4().hex[:12]}"
    yield {"url": PG_URL, "schema": schema}
    engine = create_engine(PG_URL)
    with engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()
