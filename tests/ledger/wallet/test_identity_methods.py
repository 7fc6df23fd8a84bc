"""``sign-data`` through the app, and the node walk behind ``active-identity-keys``."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from ledger.core.addresses import public_key_from_identity
from ledger.core.entry import Entry
from ledger.core.keys import verify_signature
from ledger.jsonrpc import AsyncJsonRpcClient, MissingChainHead
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import create_jsonrpc_app
from ledger.wallet.errors import ChainNotFoundError, NodeUnavailableError
from ledger.wallet.identity_methods import from_base64
from ledger.wallet.node_link import NodeLink

from .conftest import PASSPHRASE

pytestmark = pytest.mark.anyio

ZERO_FS = "Fs1KWJrpLdfucvmYwN2nWrwepLn8ercpMbzXshd1g8zyhKXLVLWj"
ZERO_FA = "FA1zT4aFpEvcnPqPCigB3fvGu4Q4mTXY22iiuV69DqE1pNhdF2MC"
ZERO_ES = "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"
ZERO_EC = "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"
DATA = b"\x00notarize me\xff"


async def test_sign_data_with_each_kind_of_key(make_rpc) -> None:
    async with make_rpc() as rpc:
        await rpc.result(
            "import-addresses", {"addresses": [{"secret": ZERO_FS}, {"secret": ZERO_ES}]}
        )
        idpub = (await rpc.result("generate-identity-key"))["public"]
        params = {"data": base64.b64encode(DATA).decode()}
        keys = []
        for signer in (ZERO_FA, ZERO_EC, idpub):
            result = await rpc.result("sign-data", {**params, "signer": signer})
            public_key = base64.b64decode(result["pubkey"])
            assert verify_signature(public_key, DATA, base64.b64decode(result["signature"]))
            keys.append(public_key)
        assert (
            keys[0]
            == keys[1]
            == bytes.fromhex("3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29")
        )
        assert keys[2] == public_key_from_identity(idpub)


async def test_sign_data_errors(make_rpc, wallet_file) -> None:
    async with make_rpc() as rpc:
        await rpc.result("import-addresses", {"addresses": [{"secret": ZERO_FS}]})
        ok = base64.b64encode(DATA).decode()
        cases = [
            ({"signer": ZERO_FA, "data": "not base64!"}, "data is not valid base64"),
            ({"signer": ZERO_EC, "data": ok}, "Wallet: address not found"),
            ({"signer": ZERO_FS, "data": ok}, "Invalid Address"),
            ({"signer": "FA-nope", "data": ok}, "Invalid Address"),
        ]
        for params, data in cases:
            assert (await rpc.error("sign-data", params))["data"] == data
    locked = wallet_file.with_name("locked.sqlite")
    async with make_rpc(wallet_file=locked, encrypted=True, passphrase=PASSPHRASE) as rpc:
        assert (await rpc.error("sign-data", {"signer": ZERO_FA, "data": ok}))["code"] == -32001


def test_base64_is_strict() -> None:
    assert from_base64("aGk=") == b"hi"
    for bad in ("aGk", "a\u00e9", "aGk=\n"):
        with pytest.raises(ValueError):
            from_base64(bad)


class _KeyMR(BaseModel):
    keymr: str


class _Hash(BaseModel):
    hash: str


class _Chain(BaseModel):
    chainid: str


class ChainNode:
    """A fake node holding one chain in two entry blocks (heights 3 and 5)."""

    def __init__(self) -> None:
        self.first = Entry.first_entry([b"c"], b"one")
        self.second = Entry(self.first.chain_id, (), b"two")
        self.entries = {e.hash().hex(): e.to_json() for e in (self.first, self.second)}
        self.blocks = {
            "aa" * 32: (3, "00" * 32, [self.first.hash().hex()]),
            "bb" * 32: (5, "aa" * 32, [self.second.hash().hex()]),
        }
        registry = MethodRegistry()
        registry.add("chain-head", self.chain_head, params=_Chain, blocking=False)
        registry.add("entry-block", self.entry_block, params=_KeyMR, blocking=False)
        registry.add("entry", lambda p: self.entries[p.hash], params=_Hash, blocking=False)
        transport = httpx.ASGITransport(app=create_jsonrpc_app(registry))
        self.client = AsyncJsonRpcClient("http://node/v2", transport=transport)

    def chain_head(self, params: _Chain) -> dict[str, Any]:
        if params.chainid != self.first.chain_id.hex():
            raise MissingChainHead()
        return {"chainhead": "bb" * 32, "chaininprocesslist": False}

    def entry_block(self, params: _KeyMR) -> dict[str, Any]:
        height, prev, hashes = self.blocks[params.keymr]
        header = {"prevkeymr": prev, "dbheight": height, "chainid": self.first.chain_id.hex()}
        return {"header": header, "entrylist": [{"entryhash": h} for h in hashes]}


async def test_chain_entries_walk_back_and_stop_at_the_height() -> None:
    node = ChainNode()
    link = NodeLink(node.client)
    chain = node.first.chain_id
    assert [(c.entry, c.height) for c in await link.chain_entries(chain, max_height=9)] == [
        (node.first, 3),
        (node.second, 5),
    ]
    assert [c.entry for c in await link.chain_entries(chain, max_height=4)] == [node.first]
    assert await link.chain_entries(chain, max_height=2) == []
    with pytest.raises(ChainNotFoundError):
        await link.chain_entries(bytes(32), max_height=9)
    node.entries[node.second.hash().hex()]["content"] = b"forged".hex()
    with pytest.raises(NodeUnavailableError, match="does not match"):
        await link.chain_entries(chain, max_height=9)
    node.blocks["aa" * 32] = (3, "bb" * 32, [])
    with pytest.raises(NodeUnavailableError, match="loop"):
        await link.chain_entries(chain, max_height=9)
    await node.client.aclose()
