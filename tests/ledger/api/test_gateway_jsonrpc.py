"""JsonRpcLedgerGateway: request shapes and result parsing against a scripted JSON-RPC server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ledger.api.outbox.gateway import (
    AnchorInfo,
    ComposedCalls,
    Composition,
    DirectoryBlockInfo,
    GatewayUnavailable,
    JsonRpcLedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.core.entry import Entry
from ledger.jsonrpc.client import JsonRpcClient

EC = "EC2DKSYyRcNWf7RS963VFYgMExo1824HVeCfQ9PGPmNzwrcmgm2r"
Handler = Callable[[dict[str, Any]], Any]


class Server:
    """A JSON-RPC 2.0 endpoint: method -> handler(params) returning a result or {"error": ...}."""

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self.handlers = handlers
        self.bodies: list[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        replies = [self._one(r) for r in (body if isinstance(body, list) else [body])]
        return httpx.Response(200, json=replies if isinstance(body, list) else replies[0])

    def _one(self, request: dict[str, Any]) -> dict[str, Any]:
        outcome = self.handlers[request["method"]](request.get("params") or {})
        if isinstance(outcome, dict) and "error" in outcome:
            return {"jsonrpc": "2.0", "id": request["id"], "error": outcome["error"]}
        return {"jsonrpc": "2.0", "id": request["id"], "result": outcome}


def gateway(node: Server, wallet: Server) -> JsonRpcLedgerGateway:
    return JsonRpcLedgerGateway(
        JsonRpcClient("http://node/v2", transport=httpx.MockTransport(node)),
        JsonRpcClient("http://wallet/v2", transport=httpx.MockTransport(wallet)),
        ec_address=EC,
    )


def composed(method: str) -> Handler:
    kind = method.split("-")[1]
    return lambda params: {
        "commit": {
            "jsonrpc": "2.0",
            "id": 0,
            "method": f"commit-{kind}",
            "params": {"message": "aa"},
        },
        "reveal": {
            "jsonrpc": "2.0",
            "id": 0,
            "method": f"reveal-{kind}",
            "params": {"entry": "bb"},
        },
    }


def test_compose_sends_one_batch_with_the_spec_params() -> None:
    wallet = Server(
        {"compose-chain": composed("compose-chain"), "compose-entry": composed("compose-entry")}
    )
    first = Entry.first_entry([b"a", b"b"], b"hello")
    later = Entry(first.chain_id, (b"x",), b"\x00\x01")
    results = gateway(Server({}), wallet).compose(
        [Composition(first, True), Composition(later, False)]
    )
    (batch,) = wallet.bodies
    assert [r["method"] for r in batch] == ["compose-chain", "compose-entry"]
    assert batch[0]["params"] == {
        "chain": {"firstentry": {"extids": ["61", "62"], "content": b"hello".hex()}},
        "ecpub": EC,
    }
    assert batch[1]["params"] == {
        "entry": {"chainid": first.chain_id.hex(), "extids": ["78"], "content": "0001"},
        "ecpub": EC,
    }
    assert results == [
        ComposedCalls(
            RpcCall("commit-chain", {"message": "aa"}), RpcCall("reveal-chain", {"entry": "bb"})
        ),
        ComposedCalls(
            RpcCall("commit-entry", {"message": "aa"}), RpcCall("reveal-entry", {"entry": "bb"})
        ),
    ]


def test_submit_keeps_per_item_errors_including_repeated_commit() -> None:
    repeated = {
        "error": {"code": -32011, "message": "Repeated Commit", "data": {"entryhash": "cc"}}
    }
    node = Server(
        {
            "commit-entry": lambda p: repeated if p["message"] == "dup" else {"txid": "t1"},
            "reveal-entry": lambda p: {"entryhash": "ee", "chainid": "ff"},
        }
    )
    calls = [
        RpcCall("commit-entry", {"message": "new"}),
        RpcCall("commit-entry", {"message": "dup"}),
        RpcCall("reveal-entry", {"entry": "00"}),
    ]
    results = gateway(node, Server({})).submit(calls)
    assert len(node.bodies) == 1 and len(node.bodies[0]) == 3
    assert results[0] == {"txid": "t1"}
    assert results[1] == RpcFailure(-32011, "Repeated Commit", {"entryhash": "cc"})
    assert results[2] == {"entryhash": "ee", "chainid": "ff"}


def test_block_reads_are_parsed() -> None:
    dblock = {
        "dblock": {
            "header": {"dbheight": 5},
            "dbentries": [
                {"chainid": "0" * 63 + "a", "keymr": "11" * 32},
                {"chainid": "ab" * 32, "keymr": "22" * 32},
            ],
            "keymr": "33" * 32,
        },
        "rawdata": "",
    }
    node = Server(
        {
            "heights": lambda p: {"directoryblockheight": 5, "leaderheight": 5},
            "dblock-by-height": lambda p: (
                dblock
                if p["height"] == 5
                else {"error": {"code": -32008, "message": "Block not found"}}
            ),
            "entry-block": lambda p: {
                "header": {},
                "entrylist": [{"entryhash": "44" * 32, "timestamp": 1}],
            },
            "anchors": lambda p: (
                {"anchor_pow": {"blockhash": "55" * 32, "transactionhash": "66" * 32}}
                if p["height"] == 5
                else {"error": {"code": -32008, "message": "Object not found"}}
            ),
        }
    )
    gw = gateway(node, Server({}))
    assert gw.height() == 5
    blocks = gw.directory_blocks([5, 6])
    assert blocks[0] == DirectoryBlockInfo(
        5, "33" * 32, (("0" * 63 + "a", "11" * 32), ("ab" * 32, "22" * 32))
    )
    assert isinstance(blocks[1], RpcFailure) and blocks[1].code == -32008
    assert gw.entry_blocks(["22" * 32]) == [["44" * 32]]
    assert gw.anchors([5, 6]) == [AnchorInfo(5, "55" * 32), None]


def test_malformed_item_becomes_a_failure_not_a_crash() -> None:
    node = Server({"entry-block": lambda p: {"entrylist": [{"no": "hash"}]}})
    (result,) = gateway(node, Server({})).entry_blocks(["22" * 32])
    assert isinstance(result, RpcFailure) and result.message == "malformed result"


def test_unreachable_server_is_gateway_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    gw = JsonRpcLedgerGateway(
        JsonRpcClient("http://node/v2", transport=httpx.MockTransport(refuse)),
        JsonRpcClient("http://wallet/v2", transport=httpx.MockTransport(refuse)),
        ec_address=EC,
    )
    with pytest.raises(GatewayUnavailable):
        gw.height()
    with pytest.raises(GatewayUnavailable):
        gw.compose([Composition(Entry.first_entry([], b""), True)])


def test_whole_batch_refusal_is_gateway_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            413,
            json={
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "Invalid Request"},
            },
        )

    gw = JsonRpcLedgerGateway(
        JsonRpcClient("http://node/v2", transport=httpx.MockTransport(refuse)),
        JsonRpcClient("http://wallet/v2", transport=httpx.MockTransport(refuse)),
        ec_address=EC,
    )
    with pytest.raises(GatewayUnavailable):
        gw.submit([RpcCall("commit-entry", {"message": "aa"})])


def test_empty_batches_make_no_request() -> None:
    node = Server({})
    gw = gateway(node, Server({}))
    assert gw.submit([]) == [] and gw.entry_blocks([]) == [] and gw.anchors([]) == []
    assert node.bodies == []


def test_long_call_lists_go_in_order_as_several_batches_within_the_limits() -> None:
    node = Server({"commit-entry": lambda p: {"message": p["message"]}})
    gw = JsonRpcLedgerGateway(
        JsonRpcClient("http://node/v2", transport=httpx.MockTransport(node)),
        JsonRpcClient("http://wallet/v2", transport=httpx.MockTransport(Server({}))),
        ec_address=EC,
        max_batch_bytes=2_000,
        max_batch_items=4,
    )
    small = [RpcCall("commit-entry", {"message": f"{i:02d}"}) for i in range(10)]
    big = RpcCall("commit-entry", {"message": "x" * 5_000})  # alone: over the byte budget
    results = gw.submit([*small[:3], big, *small[3:]])
    assert [r["message"] for r in results] == ["00", "01", "02", "x" * 5_000] + [
        f"{i:02d}" for i in range(3, 10)
    ]
    sizes = [len(body) for body in node.bodies]
    assert sizes == [3, 1, 4, 3]
    assert all(len(json.dumps(b)) < 2_000 for b in node.bodies if len(b) > 1)
