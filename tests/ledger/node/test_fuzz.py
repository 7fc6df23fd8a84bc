"""Hostile input to every node method: the right error object, never an internal error, and
no state change when the input was refused.

Requests go through the node's JSON-RPC endpoint (``handle_body``: parsing, envelope,
params validation, handlers); an HTTP-level case checks that no body gives HTTP 500.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.clock import ManualClock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.node.app import create_app
from ledger.node.service import NodeService
from tests.ledger.node.conftest import EC_KEY, START_S, make_settings

PARAM_NAMES = [
    "hash", "keymr", "height", "noraw", "chainid", "address", "addresses", "message", "entry",
    "transaction", "txid", "fulltransaction", "includerawentry",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-1, max_value=2)
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=80)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
SEED = Entry.first_entry([b"fuzz"], b"seed")
KNOWN = [SEED.hash().hex(), SEED.chain_id.hex(), Entry(SEED.chain_id, (), b"held").hash().hex()]
hexes = st.binary(max_size=400).map(bytes.hex) | st.sampled_from(
    [
        "",
        "0",
        "zz",
        "00" * 32,
        "ff" * 32,
        "0" * 63 + "c",
        "f",
        "c",
        "EC" + "1" * 50,
        "FA" + "2" * 50,
    ]
    + KNOWN
)
param_values = hexes | json_values
params_objects = st.dictionaries(st.sampled_from(PARAM_NAMES), param_values, max_size=4)
any_params = params_objects | json_values


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[tuple[asyncio.AbstractEventLoop, Any, NodeService]]:
    loop = asyncio.new_event_loop()
    app = create_app(make_settings(tmp_path), clock=ManualClock(START_S), produce_blocks=False)
    service: NodeService = app.state.node
    loop.run_until_complete(_seed(app))
    try:
        yield loop, app, service
    finally:
        service.close()
        loop.close()


async def _seed(app: Any) -> None:
    """A chain with a saved entry, a pending entry and a held reveal to aim lookups at."""
    service: NodeService = app.state.node
    first = Entry.first_entry([b"fuzz"], b"seed")
    await service.submit_commit(CommitChain.create(EC_KEY, first, timestamp_ms=service.now_ms()))
    await service.submit_reveal(first.marshal())
    for _ in range(10):
        service.clock.advance(1.0)  # type: ignore[attr-defined]
        await service.tick()
    pending = Entry(first.chain_id, (), b"pending")
    await service.submit_commit(CommitEntry.create(EC_KEY, pending, timestamp_ms=service.now_ms()))
    await service.submit_reveal(pending.marshal())
    await service.submit_reveal(Entry(first.chain_id, (), b"held").marshal())


def snapshot(service: NodeService) -> tuple[object, ...]:
    pl, rules = service.process_list, service.rules
    assert rules is not None
    return (
        service.balance_hash(temporary=True),
        len(pl.ec_objects),
        len(pl.entries),
        len(pl.tx_index),
        len(rules.held),
        len(rules.open_commits),
        service.tip.height,
        service.store.read.execute("SELECT COUNT(*) FROM journal").fetchone()[0],
    )


def call(loop: asyncio.AbstractEventLoop, app: Any, body: bytes) -> tuple[int, Any]:
    status, content = loop.run_until_complete(app.state.jsonrpc.handle_body(body))
    return status, None if content is None else orjson.loads(content)


def check_reply(
    status: int, reply: Any, *, before: tuple[object, ...], service: NodeService
) -> None:
    assert status in (200, 204, 400)
    replies = reply if isinstance(reply, list) else [reply]
    for item in replies:
        if item is None:
            continue
        assert ("result" in item) != ("error" in item)
        if "error" in item:
            assert item["error"]["code"] != -32603, item
            assert isinstance(item["error"]["message"], str)
    if all(item is None or "error" in item for item in replies):
        assert snapshot(service) == before


FUZZ = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.data())
def test_hostile_params_to_every_method(harness: Any, data: st.DataObject) -> None:
    loop, app, service = harness
    names = sorted(app.state.jsonrpc.registry.names())
    method = data.draw(st.sampled_from(names))
    params = data.draw(any_params)
    before = snapshot(service)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    status, reply = call(loop, app, body)
    check_reply(status, reply, before=before, service=service)
    if "error" in reply:
        assert status == 400


def _mutations() -> st.SearchStrategy[tuple[str, str, bytes]]:
    first = Entry.first_entry([b"fuzz"], b"seed")
    entry = Entry(first.chain_id, (b"x",), b"y" * 40)
    commit = CommitEntry.create(EC_KEY, entry, timestamp_ms=int(START_S * 1000))
    chain = CommitChain.create(
        EC_KEY, Entry.first_entry([b"m"], b""), timestamp_ms=int(START_S * 1000)
    )
    bases = [
        ("commit-entry", "message", commit.marshal()),
        ("commit-chain", "message", chain.marshal()),
        ("send-raw-message", "message", b"\x06" + commit.marshal()),
        ("reveal-entry", "entry", entry.marshal()),
        ("coin-submit", "transaction", bytes.fromhex("02014f8a7fcd1b000000")),
    ]
    return st.sampled_from(bases)


@FUZZ
@given(base=_mutations(), data=st.data())
def test_mutated_messages(harness: Any, base: tuple[str, str, bytes], data: st.DataObject) -> None:
    """Flip, cut or extend valid messages: refused cleanly (or accepted if still valid)."""
    loop, app, service = harness
    method, field, raw = base
    kind = data.draw(st.sampled_from(["flip", "cut", "extend"]))
    if kind == "flip":
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:pos] + bytes([raw[pos] ^ data.draw(st.integers(1, 255))]) + raw[pos + 1 :]
    elif kind == "cut":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        raw = raw + data.draw(st.binary(min_size=1, max_size=64))
    before = snapshot(service)
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {field: raw.hex()}})
    status, reply = call(loop, app, body)
    check_reply(status, reply, before=before, service=service)
    if method.startswith("commit") or method == "coin-submit":
        assert "error" in reply  # no mutation of a signed message stays valid


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_arbitrary_bodies_never_give_http_500(harness: Any, body: bytes) -> None:
    loop, app, service = harness
    before = snapshot(service)

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            return await client.post("/v2", content=body, headers={"content-type": "text/plain"})

    response = loop.run_until_complete(post())
    assert response.status_code in (200, 204, 400, 413)
    if response.status_code != 204:
        check_reply(response.status_code, response.json(), before=before, service=service)
