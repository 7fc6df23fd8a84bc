"""Fixtures of the API tests: an app on SQLite (or PostgreSQL) and the sandbox's in-memory ledger."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from ledger.api.accounts import create_account
from ledger.api.app import create_app, services_of
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.api.services import Services
from ledger.api.settings import ApiSettings
from ledger.core.clock import ManualClock
from tests.harness.postgres import conninfo

EC_ADDRESS = "EC2DKSYyRcNWf7RS963VFYgMExo1824HVeCfQ9PGPmNzwrcmgm2r"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def pg_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    import psycopg

    schema = f"api_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(conninfo(postgres_url), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    yield f"{postgres_url}?options=-csearch_path%3D{schema}"
    with psycopg.connect(conninfo(postgres_url), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Both backends: a SQLite file, and a PostgreSQL schema (``postgres_url``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'api.sqlite'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'api.sqlite'}"


@dataclass
class Api:
    """A running app (lifespan entered), its client, an account key and the in-memory ledger."""

    app: FastAPI
    client: TestClient
    key: str
    ledger: InMemoryLedger
    clock: ManualClock
    closed: bool = False

    def close(self) -> None:
        """Run the app's shutdown (as a process exit would, minus the crash)."""
        if not self.closed:
            self.closed = True
            self.client.__exit__(None, None, None)

    @property
    def services(self) -> Services:
        return services_of(self.app)

    @property
    def headers(self) -> dict[str, str]:
        return {"user-key": self.key}

    def run_worker(self) -> Any:
        assert self.services.worker is not None
        return self.services.worker.run_once()

    def new_key(self, name: str = "other") -> str:
        with self.services.db.write() as session:
            return create_account(session, name, clock=self.clock)[1]

    def post_chain(
        self, ext_ids: list[bytes], content: bytes = b"", **extra: Any
    ) -> httpx.Response:
        body = {"external_ids": [b64(x) for x in ext_ids], "content": b64(content), **extra}
        return self.client.post("/v1/chains", json=body, headers=self.headers)

    def post_entry(
        self, chain_id: str, ext_ids: list[bytes], content: bytes = b"", **extra: Any
    ) -> httpx.Response:
        body = {"external_ids": [b64(x) for x in ext_ids], "content": b64(content), **extra}
        return self.client.post(f"/v1/chains/{chain_id}/entries", json=body, headers=self.headers)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.get(path, headers=self.headers, **kwargs)


ApiFactory = Callable[..., Api]


@pytest.fixture
def make_api(tmp_path: Path, sqlite_url: str) -> Iterator[ApiFactory]:
    """Factory: ``make_api(database_url=..., ledger=..., **settings)`` -> started Api."""
    started: list[Api] = []

    def factory(
        *,
        database_url: str | None = None,
        ledger: InMemoryLedger | None = None,
        clock: ManualClock | None = None,
        http_transport: httpx.BaseTransport | None = None,
        resolver: Any = None,
        key: str | None = None,
        ledger_reads: Any = None,
        **overrides: Any,
    ) -> Api:
        values: dict[str, Any] = {
            "data_dir": tmp_path,
            "database_url": database_url or sqlite_url,
            "ec_address": EC_ADDRESS,
            "worker_enabled": False,
            "anchor_poll_interval_s": 0.0,
            "callback_secret": "test-secret",
            "auth_failure_burst": 1_000_000,  # tests/ledger/api/test_auth.py sets its own
            **overrides,
        }
        settings = ApiSettings(**values)
        ledger = ledger or InMemoryLedger()
        clock = clock or ManualClock(1_700_000_000.0)
        app = create_app(
            settings,
            gateway=ledger,
            clock=clock,
            http_transport=http_transport,
            resolver=resolver,
            ledger_reads=ledger_reads,
        )
        client = TestClient(app)
        client.__enter__()
        if key is None:
            with services_of(app).db.write() as session:
                key = create_account(session, "tester", clock=clock)[1]
        started.append(Api(app=app, client=client, key=key, ledger=ledger, clock=clock))
        return started[-1]

    yield factory
    for api in reversed(started):
        api.close()


@pytest.fixture
def api(make_api: ApiFactory) -> Api:
    return make_api()


class Receiver:
    """httpx MockTransport that records callback requests and answers scripted statuses."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.statuses = list(statuses or [])

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.statuses.pop(0) if self.statuses else 200)

    def params(self) -> list[list[tuple[str, str]]]:
        return [parse_qsl(urlsplit(str(r.url)).query) for r in self.requests]


@pytest.fixture
def receiver() -> Receiver:
    return Receiver()


@pytest.fixture
def hooked(make_api: ApiFactory, receiver: Receiver) -> Api:
    return make_api(
        callback_allowed_hosts=["127.0.0.1"], http_transport=httpx.MockTransport(receiver)
    )
