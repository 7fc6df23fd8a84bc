"""Hostile requests to the three JSON-RPC servers: node, wallet and anchoring service.

Each server runs in process behind ``httpx.ASGITransport`` (the wallet and the anchoring
service talk to the in-process node the same way). Two kinds of input:

* params: every registered method gets hypothesis-made params built from its own field
  names (wrong types, missing fields, huge and negative numbers, bad hex, wrong lengths,
  nested junk, params that are not objects). Each example sends one batch holding every
  method of the server, and one single request, so every method is hit once per example.
  The property: no handler crashes (an exception the registry has to catch and log, shown
  as a bare Internal error -32603), no reply of the node or the anchoring service is
  -32603 at all, and no HTTP status is 5xx. The wallet's own refusals keep walletd's
  -32603-with-a-reason (see ``Server.reasoned_internal_errors``).
* raw bodies: oversized, nested 100,000 deep, invalid UTF-8, empty, a batch of 10,000
  items, ``text/plain``, ``GET`` with and without a body.

``tests/ledger/node/test_fuzz.py`` goes further for the node alone (no state change when
a request is refused, mutated signed messages); it is not repeated here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nacl.pwhash
import orjson
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from ledger import devnet
from ledger.anchor.app import create_app as create_anchor_app
from ledger.anchor.settings import AnchorSettings
from ledger.core.addresses import seed_from_ec_secret
from ledger.core.clock import ManualClock
from ledger.core.commit import CommitChain
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.jsonrpc import AsyncJsonRpcClient
from ledger.node.app import create_app as create_node_app
from ledger.node.settings import NodeSettings
from ledger.wallet import WalletSettings
from ledger.wallet import create_app as create_wallet_app
from ledger.wallet.node_link import NodeLink

EXAMPLES = 40  # per server; every example calls every method once in a batch, once alone
REQUEST_TIMEOUT_S = 60.0  # a request slower than this is reported as a hang
INTERNAL_ERROR = -32603
START_S = 1_700_000_000.0


@dataclass
class Server:
    """One in-process JSON-RPC server and what the test needs to know of it."""

    name: str
    app: Any  # an ASGI app whose ``state.jsonrpc`` is the JSON-RPC endpoint
    client: httpx.AsyncClient
    error_status: int  # HTTP status of a single error reply (400 for every server)
    max_body_bytes: int
    cheap_method: str  # a method without params, to check the server still answers
    # The wallet answers its own refusals (unknown transaction name, fee too low, node
    # unreachable) as walletd does: -32603 with the reason in ``data`` (docs/formats.md §9.2,
    # ``ledger/wallet/rpc_errors.py``). Those are answers, not crashes; a crash is an
    # exception the registry had to catch and log, which ``Harness.crashes`` records.
    reasoned_internal_errors: bool = False

    def methods(self) -> list[tuple[str, type[BaseModel] | None]]:
        """(primary name, params model) of every registered method."""
        registry = self.app.state.jsonrpc.registry
        return [(m.name, m.params_model) for m in registry.methods()]


class CrashLog(logging.Handler):
    """Keeps the ERROR records of ``ledger.jsonrpc``: the registry logs every handler
    exception it turns into a bare Internal error, the server every unencodable result."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        """The crashes since the last call, formatted (message and exception)."""
        taken = [self.format(r) for r in self.records]
        self.records.clear()
        return taken


@dataclass
class Harness:
    loop: asyncio.AbstractEventLoop
    servers: dict[str, Server]
    crashes: CrashLog

    def run(self, coro: Any) -> Any:
        """Run one request to completion; a request slower than the limit is a hang."""
        result = self.loop.run_until_complete(asyncio.wait_for(coro, REQUEST_TIMEOUT_S))
        crashes = self.crashes.take()
        assert not crashes, "\n\n".join(crashes)
        return result


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """Node, wallet and anchoring service sharing one loop and one manual clock."""
    root: Path = tmp_path_factory.mktemp("hostile-rpc")
    loop = asyncio.new_event_loop()
    clock = ManualClock(START_S)
    node_settings = NodeSettings(data_dir=root / "node", sqlite_synchronous="NORMAL")
    node_app = create_node_app(node_settings, clock=clock, produce_blocks=False)
    node_transport = httpx.ASGITransport(app=node_app)
    node_client = AsyncJsonRpcClient("http://node/v2", transport=node_transport)
    wallet_settings = WalletSettings(
        wallet_file=root / "wallet.sqlite",
        restore_mnemonic=" ".join(["yellow"] * 12),
        kdf_opslimit=nacl.pwhash.argon2id.OPSLIMIT_MIN,
        kdf_memlimit_bytes=nacl.pwhash.argon2id.MEMLIMIT_MIN,
    )
    wallet_app = create_wallet_app(wallet_settings, clock=clock, node=NodeLink(node_client))
    anchor_settings = AnchorSettings(
        data_dir=root / "anchor",
        node_url="http://node/v2",
        pow_difficulty_bits=8,
        confirmations=2,
        sqlite_synchronous="NORMAL",
    )
    anchor_app = create_anchor_app(
        anchor_settings, clock=clock, node_transport=node_transport, run_loops=False
    )
    stack = contextlib.AsyncExitStack()
    servers: dict[str, Server] = {}

    async def start() -> None:
        for name, app, status, limit, cheap in [
            ("node", node_app, 400, node_settings.max_body_bytes, "properties"),
            ("wallet", wallet_app, 400, wallet_settings.max_body_bytes, "properties"),
            ("anchor", anchor_app, 400, anchor_settings.max_body_bytes, "pow-info"),
        ]:
            await stack.enter_async_context(asgi_lifespan(app))
            transport = httpx.ASGITransport(app=app)
            client = httpx.AsyncClient(transport=transport, base_url=f"http://{name}")
            await stack.enter_async_context(client)
            servers[name] = Server(name, app, client, status, limit, cheap, name == "wallet")
        await _seed(node_app, anchor_app, clock)

    crashes = CrashLog()
    logging.getLogger("ledger.jsonrpc").addHandler(crashes)
    try:
        loop.run_until_complete(start())
        yield Harness(loop, servers, crashes)
    finally:
        logging.getLogger("ledger.jsonrpc").removeHandler(crashes)
        loop.run_until_complete(stack.aclose())
        loop.run_until_complete(node_client.aclose())
        loop.close()


@contextlib.asynccontextmanager
async def asgi_lifespan(app: Any) -> AsyncIterator[None]:
    """Run ``app``'s ASGI lifespan (startup on entry, shutdown on exit), as a server does."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    task = asyncio.ensure_future(app(scope, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        stopped = await outbox.get()
        await task
        assert stopped["type"] == "lifespan.shutdown.complete", stopped


async def _seed(node_app: Any, anchor_app: Any, clock: ManualClock) -> None:
    """Some real state to aim at: a chain in a saved block, anchored and mined upon."""
    service = node_app.state.node
    key = SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET))
    await service.submit_commit(CommitChain.create(key, SEED, timestamp_ms=service.now_ms()))
    await service.submit_reveal(SEED.marshal())
    for _ in range(10):
        clock.advance(60.0)
        await service.tick()
    runtime = anchor_app.state.anchor
    await runtime.service.step()
    for _ in range(3):
        clock.advance(1.0)
        runtime.chain.mine_block()
    await runtime.service.step()


# -- hostile values --------------------------------------------------------------------

SEED = Entry.first_entry([b"hostile"], b"seed")
KNOWN_HEX = [SEED.hash().hex(), SEED.chain_id.hex(), SEED.marshal().hex()]
HEX_JUNK = [
    "", "0", "zz", "0x" + "00" * 32, "00" * 31, "00" * 32, "00" * 33, "ff" * 32, "AB" * 32,
    "g" * 64, " " + "00" * 32, "00" * 32 + "\n", "0" * 63 + "a", "0" * 63 + "c", "0" * 63 + "d",
    "0" * 63 + "f", "00" * 5000, "\u0660" * 64,
]  # fmt: skip
ADDRESS_JUNK = [
    devnet.DEV_FCT_ADDRESS, devnet.DEV_EC_ADDRESS, devnet.DEV_FCT_SECRET, devnet.DEV_EC_SECRET,
    devnet.DEV_FCT_ADDRESS[:-1], devnet.DEV_EC_ADDRESS[:-1] + "1", "FA", "EC", "Es", "Fs",
    "FA" + "1" * 50, "idpub" + "1" * 50, "idsec2" + "z" * 49, "EC" + "0" * 50,
]  # fmt: skip
NUMBER_JUNK = [
    -1, -(2**31), -(2**63) - 1, 2**31, 2**32, 2**53 + 1, 2**63, 2**64, 2**64 + 1, 10**30,
    -(10**30), 0, 1, 1.5, -0.0, 1e308,
]  # fmt: skip
scalars = (
    st.none()
    | st.booleans()
    | st.sampled_from(NUMBER_JUNK)
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(HEX_JUNK + KNOWN_HEX + ADDRESS_JUNK)
    | st.binary(max_size=80).map(bytes.hex)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)


def field_names(model: type[BaseModel] | None) -> list[str]:
    """The wire names of a params model's fields (aliases where they have one)."""
    if model is None:
        return ["force", "height"]  # methods without params ignore them: still sent
    return [field.alias or name for name, field in model.model_fields.items()]


_ENTRY_JSON = {"chainid": SEED.chain_id.hex(), "extids": ["00"], "content": "ab"}
# Values that pass validation for fields of these names, so that the other, hostile fields
# of the same params reach the handlers instead of stopping at the first bad field.
PLAUSIBLE: dict[str, list[Any]] = {
    "address": [devnet.DEV_FCT_ADDRESS, devnet.DEV_EC_ADDRESS, devnet.DEV_FCT_SECRET],
    "addresses": [[devnet.DEV_FCT_ADDRESS], [{"secret": devnet.DEV_EC_SECRET}], []],
    "ecpub": [devnet.DEV_EC_ADDRESS],
    "hash": KNOWN_HEX[:2],
    "keymr": KNOWN_HEX[:2],
    "chainid": [SEED.chain_id.hex()],
    "txid": KNOWN_HEX[:1],
    "height": [0, 1, 2, 3],
    "start": [0, 1],
    "count": [1, 2],
    "depth": [1, 2],
    "tx-name": ["t1", "t2"],
    "amount": [1, 10**8],
    "entry": [SEED.marshal().hex(), _ENTRY_JSON],
    "chain": [{"firstentry": {"extids": ["01"], "content": "02"}}],
    "message": [SEED.marshal().hex()],
    "noraw": [True, False],
    "force": [True, False],
    "includerawentry": [True],
    "fulltransaction": [True],
    "name": [["6869"]],
    "range": [{"start": 0, "end": 3}],
    "timeout": [1],
}


def field_value(name: str) -> st.SearchStrategy[Any]:
    """A hostile value for field ``name``, or (one time in three) a plausible one."""
    plausible = PLAUSIBLE.get(name)
    if plausible is None:
        return json_values
    return st.sampled_from(["hostile", "hostile", "plausible"]).flatmap(
        lambda kind: json_values if kind == "hostile" else st.sampled_from(plausible)
    )


def params_for(model: type[BaseModel] | None) -> st.SearchStrategy[Any]:
    """Params aimed at one method: its own fields with hostile values, or junk instead.

    The kind is drawn first and explicitly, because ``one_of`` weights each alternative of
    a nested ``one_of`` separately, which would make scalar junk drown the aimed params.
    """
    names = field_names(model)
    fields = st.fixed_dictionaries({}, optional={name: field_value(name) for name in names})
    extra = st.dictionaries(st.text(max_size=10), json_values, max_size=2)
    kinds = {
        "aimed": fields,
        "aimed+extra": st.builds(lambda a, b: {**b, **a}, fields, extra),
        "array": st.lists(json_values, max_size=3),
        "scalar": scalars,
        "empty": st.just({}),
    }
    weighted = ["aimed"] * 5 + ["aimed+extra", "array", "scalar", "empty"]
    return st.sampled_from(weighted).flatmap(kinds.__getitem__)


def request(method: str, params: Any, request_id: int) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None or request_id % 2:
        body["params"] = params
    return body


def check_replies(server: Server, response: httpx.Response, sent: Any) -> set[str]:
    """No 5xx, a JSON body, no Internal error in any reply (see the module doc).

    Returns the outcomes seen (``"result"``, ``"error -32602"``, ...), for statistics.
    """
    assert response.status_code < 500, (server.name, response.status_code, response.text)
    if response.status_code == 204:
        return set()
    reply = response.json()
    replies = reply if isinstance(reply, list) else [reply]
    outcomes = set()
    for item in replies:
        assert ("result" in item) != ("error" in item), item
        outcomes.add(f"error {item['error']['code']}" if "error" in item else "result")
        if "error" in item:
            error = item["error"]
            assert isinstance(error["message"], str)
            if error["code"] != INTERNAL_ERROR:
                continue
            reasoned = isinstance(error.get("data"), str) and error["data"]
            assert server.reasoned_internal_errors and reasoned, (
                server.name,
                _sent_for(sent, item),
                item,
            )
    return outcomes


def _sent_for(sent: Any, reply: dict[str, Any]) -> Any:
    if isinstance(sent, list):
        return next((s for s in sent if s.get("id") == reply.get("id")), sent)
    return sent


async def post(server: Server, body: bytes, **kwargs: Any) -> httpx.Response:
    return await server.client.post("/v2", content=body, **kwargs)


# No shrinking: an example is a batch of every method, so shrinking one would re-send
# hundreds of batches; the assertion names the one request whose reply failed instead.
FUZZ = settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("name", ["node", "wallet", "anchor"])
@FUZZ
@given(data=st.data())
def test_hostile_params_to_every_method(harness: Harness, name: str, data: st.DataObject) -> None:
    server = harness.servers[name]
    methods = server.methods()
    batch = [
        request(method, data.draw(params_for(model), label=method), index)
        for index, (method, model) in enumerate(methods)
    ]
    body = json.dumps(batch).encode()
    response = harness.run(post(server, body))
    for outcome in sorted(check_replies(server, response, batch)):
        event(outcome)
    assert response.status_code == 200
    assert len(response.json()) == len(batch)
    single = batch[data.draw(st.integers(0, len(batch) - 1), label="single")]
    response = harness.run(post(server, json.dumps(single).encode()))
    check_replies(server, response, single)
    if "error" in response.json():
        assert response.status_code == server.error_status


# -- raw bodies ------------------------------------------------------------------------

SERVERS = ["node", "wallet", "anchor"]


def parse_error(server: Server, response: httpx.Response) -> None:
    assert response.status_code == server.error_status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["id"] is None and body["error"]["code"] == -32700


@pytest.mark.parametrize("name", SERVERS)
def test_oversized_body_is_413_without_reading_it_all(harness: Harness, name: str) -> None:
    server = harness.servers[name]
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"properties","params":{"x":"'
        + b"a" * (server.max_body_bytes)
        + b'"}}'
    )
    response = harness.run(post(server, body))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600


@pytest.mark.parametrize("name", SERVERS)
@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"jsonrpc":"2.0","id":1,"method":"properties","params":{"x":' + b"[" * 5_000 + b"}}",
    ],
    ids=["open-brackets", "balanced-brackets", "nested-objects", "nested-params"],
)
def test_deeply_nested_json_is_a_parse_error(harness: Harness, name: str, body: bytes) -> None:
    server = harness.servers[name]
    parse_error(server, harness.run(post(server, body)))
    # and the server still answers afterwards
    ok = harness.run(post(server, orjson.dumps(request(server.cheap_method, None, 2))))
    assert ok.status_code == 200 and "result" in ok.json()


@pytest.mark.parametrize("name", SERVERS)
@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        b"\xff\xfe\xfd",
        b'{"jsonrpc":"2.0","id":1,"method":"prop\xc3\x28erties"}',
        b'{"jsonrpc":"2.0","id":1,"method":"properties"}\x00',
        b"\xef\xbb\xbf",
        b"NaN",
        b'{"jsonrpc":"2.0","id":1e400,"method":"properties"}',
    ],
    ids=[
        "empty",
        "blank",
        "invalid-utf8",
        "invalid-utf8-in-string",
        "trailing-nul",
        "bom-only",
        "nan",
        "huge-float-id",
    ],  # fmt: skip
)
def test_garbage_bodies_are_parse_errors(harness: Harness, name: str, body: bytes) -> None:
    server = harness.servers[name]
    parse_error(server, harness.run(post(server, body)))


@pytest.mark.parametrize("name", SERVERS)
def test_batch_of_ten_thousand_items_is_answered_in_order(harness: Harness, name: str) -> None:
    server = harness.servers[name]
    batch = [request(server.cheap_method, None, i) for i in range(10_000)]
    batch[5_000] = {"jsonrpc": "2.0", "id": 5_000, "method": "no-such-method"}
    started = time.perf_counter()
    response = harness.run(post(server, orjson.dumps(batch)))
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    replies = response.json()
    assert [r["id"] for r in replies] == list(range(10_000))
    assert replies[5_000]["error"]["code"] == -32601
    assert all("result" in r for i, r in enumerate(replies) if i != 5_000)
    print(f"{name}: batch of 10,000 answered in {elapsed:.2f} s")


@pytest.mark.parametrize("name", SERVERS)
@pytest.mark.parametrize(
    "content_type", ["text/plain", "text/plain; charset=latin-1", "image/png", ""]
)
def test_any_content_type_is_read_as_json(harness: Harness, name: str, content_type: str) -> None:
    server = harness.servers[name]
    body = orjson.dumps(request(server.cheap_method, None, 7))
    response = harness.run(post(server, body, headers={"content-type": content_type}))
    assert response.status_code == 200 and response.json()["id"] == 7


@pytest.mark.parametrize("name", SERVERS)
def test_get_with_and_without_a_body(harness: Harness, name: str) -> None:
    server = harness.servers[name]
    body = orjson.dumps(request(server.cheap_method, None, 8))
    with_body = harness.run(server.client.request("GET", "/v2", content=body))
    assert with_body.status_code == 200 and with_body.json()["id"] == 8
    parse_error(server, harness.run(server.client.get("/v2")))
    parse_error(server, harness.run(server.client.get("/v2?method=properties&id=1")))


@pytest.mark.parametrize("name", SERVERS)
@pytest.mark.parametrize("verb", ["PUT", "DELETE", "PATCH"])
def test_other_verbs_are_405_not_500(harness: Harness, name: str, verb: str) -> None:
    server = harness.servers[name]
    response = harness.run(server.client.request(verb, "/v2", content=b"{}"))
    assert response.status_code == 405


@pytest.mark.parametrize("name", SERVERS)
@pytest.mark.parametrize(
    "payload",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "properties", "params": "x" * 10_000},
        {"jsonrpc": "2.0", "id": 2**70, "method": "properties"},
        {"jsonrpc": "2.0", "id": "x" * 100_000, "method": "properties"},
        {"jsonrpc": "2.0", "id": 1, "method": "a" * 100_000},
        {"jsonrpc": "2.0", "id": 1, "method": "properties", "params": [[[[[]]]]] * 1000},
        [[1, 2], {"jsonrpc": "2.0"}, None, "x", []],
        [{"jsonrpc": "2.0", "method": "properties"}] * 1000,
    ],
    ids=[
        "string-params",
        "huge-id",
        "long-id",
        "long-method",
        "array-params",
        "junk-batch",
        "notification-batch",
    ],  # fmt: skip
)
def test_odd_envelopes_are_refused_cleanly(harness: Harness, name: str, payload: Any) -> None:
    server = harness.servers[name]
    body = json.dumps(payload).encode()
    response = harness.run(post(server, body))
    check_replies(server, response, payload)
