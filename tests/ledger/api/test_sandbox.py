"""Sandbox mode: own database, test ledger without anchoring, purge, the same keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
from sqlalchemy import func, select

from ledger.api.accounts import revoke_account, verify_key
from ledger.api.db import Database
from ledger.api.models import Account, Chain, EntryRow
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.api.settings import ApiSettings

from .conftest import ApiFactory, b64


def _count(db: Database, model: object) -> int:
    with db.read() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0  # type: ignore[arg-type]


def _sandbox(make_api: ApiFactory, tmp_path: Path, **overrides: object):
    main_url = f"sqlite:///{tmp_path / 'api.sqlite'}"
    sandbox_url = f"sqlite:///{tmp_path / 'sandbox.sqlite'}"
    live = make_api(database_url=main_url)  # the production service and its account
    ledger = overrides.pop("ledger", None) or InMemoryLedger()
    settings = {
        "sandbox": True,
        "sandbox_database_url": sandbox_url,
        "sandbox_block_time_s": 10.0,
        "sandbox_purge_interval_s": 3600.0,
        **overrides,
    }
    box = make_api(database_url=main_url, ledger=ledger, key=live.key, **settings)
    return live, box


def test_sandbox_uses_its_own_database_and_the_same_keys(
    make_api: ApiFactory, tmp_path: Path
) -> None:
    live, box = _sandbox(make_api, tmp_path)
    assert box.get("/v1").json()["sandbox"] is True
    assert live.get("/v1").json()["sandbox"] is False
    answer = box.post_chain([b"sandboxed"], b"hello")
    assert answer.status_code == 202
    chain_id = answer.json()["chain_id"]
    assert box.get(f"/v1/chains/{chain_id}").status_code == 200
    assert live.get(f"/v1/chains/{chain_id}").status_code == 404
    assert _count(live.services.db, Chain) == 0
    assert box.services.db is not box.services.accounts_db
    assert _count(box.services.db, Chain) == 1
    assert box.services.accounts_db.url == live.services.db.url
    other = box.client.get("/v1/chains", headers={"user-key": "nope"})
    assert other.status_code == 403


def test_test_ledger_reaches_ledger_stage_but_never_anchor(
    make_api: ApiFactory, tmp_path: Path
) -> None:
    _, box = _sandbox(make_api, tmp_path)
    sandbox = box.services.sandbox
    assert sandbox is not None and sandbox.ledger is box.ledger
    chain_id = box.post_chain([b"staged"]).json()["chain_id"]
    box.run_worker()  # revealed to the test ledger
    box.clock.advance(10.0)
    assert "block" in sandbox.run_due()
    box.run_worker()
    assert box.get(f"/v1/chains/{chain_id}").json()["stage"] == "ledger"
    for _ in range(3):
        box.clock.advance(600.0)
        sandbox.run_due()
        box.run_worker()
    assert box.get(f"/v1/chains/{chain_id}").json()["stage"] == "ledger"
    assert box.ledger.calls["anchors"] == 0  # never even asked


class ExternalTestNetwork:
    """An external test network's node and wallet (not the built-in ledger) that anchors."""

    def __init__(self) -> None:
        self.ledger = InMemoryLedger()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, name)


def test_external_test_network_anchors_reach_neither_stage_nor_callback(
    make_api: ApiFactory, tmp_path: Path
) -> None:
    hooks: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        hooks.append(request)
        return httpx.Response(200)

    network = ExternalTestNetwork()
    _, box = _sandbox(
        make_api,
        tmp_path,
        ledger=network,
        callback_allowed_hosts=["127.0.0.1"],
        http_transport=httpx.MockTransport(receive),
    )
    assert box.services.sandbox is not None and box.services.sandbox.ledger is None  # external
    hook = "http://127.0.0.1:9/hook"
    stages = ["ledger", "anchor"]
    chain_id = box.post_chain([b"ext"], callback_url=hook, callback_stages=stages).json()
    box.run_worker()
    block = network.ledger.mine_block()
    box.run_worker()
    network.ledger.anchor_block(block.height, "ab" * 32)  # the external node anchors it
    for _ in range(3):
        box.clock.advance(60.0)
        box.run_worker()
    assert box.get(f"/v1/chains/{chain_id['chain_id']}").json()["stage"] == "ledger"
    sent = [dict(parse_qsl(urlsplit(str(r.url)).query))["stage"] for r in hooks]
    assert sent == ["ledger"]  # the anchor callback is never sent
    assert network.ledger.calls["anchors"] == 0


def test_purge_deletes_chains_and_entries_but_keeps_accounts(
    make_api: ApiFactory, tmp_path: Path
) -> None:
    _, box = _sandbox(make_api, tmp_path, sandbox_purge_interval_s=100.0)
    sandbox = box.services.sandbox
    assert sandbox is not None
    chain_id = box.post_chain([b"short lived"]).json()["chain_id"]
    body = {"external_ids": [b64(b"e")], "content": b64(b"x")}
    headers = box.headers
    assert (
        box.client.post(f"/v1/chains/{chain_id}/entries", json=body, headers=headers).status_code
        == 202
    )
    box.run_worker()
    box.clock.advance(100.0)
    assert "purge" in sandbox.run_due()
    assert _count(box.services.db, EntryRow) == 0 and _count(box.services.db, Chain) == 0
    assert _count(box.services.db, Account) >= 1
    assert box.get(f"/v1/chains/{chain_id}").status_code == 404
    assert box.get("/v1/chains").json()["items"] == []
    again = box.post_chain([b"short lived"])  # the same chain can be made again
    assert again.status_code == 202 and again.json()["chain_id"] == chain_id
    box.run_worker()
    box.clock.advance(10.0)
    sandbox.run_due()
    box.run_worker()
    assert box.get(f"/v1/chains/{chain_id}").json()["stage"] == "ledger"


def test_revocation_in_the_main_database_reaches_the_sandbox(
    make_api: ApiFactory, tmp_path: Path
) -> None:
    live, box = _sandbox(make_api, tmp_path)
    assert box.post_chain([b"before"]).status_code == 202
    with live.services.db.write() as session:
        account = verify_key(session, live.key)
        assert account is not None
        revoke_account(session, account.id)
    sandbox = box.services.sandbox
    assert sandbox is not None
    box.clock.advance(10.0)
    sandbox.run_due()  # copies the accounts (revocation included)
    assert box.post_chain([b"after"]).status_code == 403
    assert box.get("/v1/chains").status_code == 403


def test_sandbox_settings_defaults(tmp_path: Path) -> None:
    settings = ApiSettings(data_dir=tmp_path, sandbox=True)
    assert settings.resolved_records_url() == f"sqlite:///{tmp_path / 'sandbox.sqlite'}"
    assert settings.resolved_database_url() == f"sqlite:///{tmp_path / 'api.sqlite'}"
    assert ApiSettings(data_dir=tmp_path).resolved_records_url() == settings.resolved_database_url()
