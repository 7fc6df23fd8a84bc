"""A publishing API started in process for the hostile-input and route-security tests.

``started_api`` runs the app (SQLite, the sandbox's in-memory ledger, a manual clock) behind
Starlette's ``TestClient`` with one account and one chain; ``Target.routes()`` lists
every route the app serves, read from the app itself, so that tests which loop over it
cover a route added later without being edited.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from ledger.api.accounts import create_account
from ledger.api.app import create_app, services_of
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.api.settings import ApiSettings
from ledger.core.clock import ManualClock
from tests.ledger.api.conftest import EC_ADDRESS, b64

__all__ = ["Target", "app_routes", "started_api"]


def app_routes(app: FastAPI) -> list[tuple[str, str]]:
    """``(verb, path template)`` of every HTTP route of ``app``, sorted.

    FastAPI 0.150 keeps an included router as one wrapper route, which
    ``fastapi.routing.iter_route_contexts`` expands; older versions list the routes
    themselves.
    """
    try:
        from fastapi.routing import iter_route_contexts  # type: ignore[attr-defined]
    except ImportError:  # FastAPI < 0.150
        contexts: Any = app.routes
    else:
        contexts = iter_route_contexts(app.routes)
    found = set()
    for context in contexts:
        path, methods = getattr(context, "path", None), getattr(context, "methods", None)
        if path is not None and methods:
            found |= {(verb, path) for verb in methods if verb != "HEAD"}
    return sorted(found)


@dataclass
class Target:
    """The app, its client, the account's key and one chain with its first entry."""

    app: FastAPI
    client: TestClient
    headers: dict[str, str]
    chain_id: str
    entry_hash: str
    clock: ManualClock

    def routes(self) -> list[tuple[str, str]]:
        """``app_routes(self.app)``."""
        return app_routes(self.app)

    def fill(self, template: str, **overrides: str) -> str:
        """``template`` with its path parameters set to the owned chain and entry."""
        values = {"chain_id": self.chain_id, "entry_hash": self.entry_hash, **overrides}
        return template.format(**values)

    def new_key(self, name: str) -> str:
        """The key of a new account."""
        with services_of(self.app).db.write() as session:
            return create_account(session, name, clock=self.clock)[1]


@contextmanager
def started_api(root: Path, **overrides: Any) -> Iterator[Target]:
    """The API on SQLite under ``root`` with ``overrides`` of its settings, started."""
    clock = ManualClock(1_700_000_000.0)
    values: dict[str, Any] = {
        "data_dir": root,
        "database_url": f"sqlite:///{root / 'api.sqlite'}",
        "ec_address": EC_ADDRESS,
        "worker_enabled": False,
        "anchor_poll_interval_s": 0.0,
        "callback_secret": "test-secret",
        "rate_limit_burst": 10**9,  # the manual clock never refills the bucket
        "auth_failure_burst": 10**9,  # wrong keys on every route: not a guessing attack
        **overrides,
    }
    app = create_app(ApiSettings(**values), gateway=InMemoryLedger(), clock=clock)
    with TestClient(app) as client:
        with services_of(app).db.write() as session:
            key = create_account(session, "owner", clock=clock)[1]
        headers = {"user-key": key}
        body = {"external_ids": [b64(b"owned")], "content": b64(b"first")}
        created = client.post("/v1/chains", json=body, headers=headers)
        assert created.status_code == 202, created.text
        answer = created.json()
        yield Target(app, client, headers, answer["chain_id"], answer["entry_hash"], clock)
