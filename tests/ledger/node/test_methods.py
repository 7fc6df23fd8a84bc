"""Every node method of docs/jsonrpc.md §4 (and factomd's aliases): params, result fields, errors.

Shapes: docs/jsonrpc.md §4 (Node methods) and docs/formats.md §9.3; errors are
JSON-RPC error objects with factomd's codes, sent with HTTP 400.
"""

from __future__ import annotations

from typing import Any

import pytest

from ledger import devnet
from ledger.core.addresses import (
    fct_public_address,
    public_key_from_ec_address,
    rcd_hash_from_fct_address,
)
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.transaction import Transaction, TxAddress
from tests.ledger.node.conftest import FCT_KEY, NodeHarness
from tests.ledger.node.test_blocks import coin_tx, submit

pytestmark = pytest.mark.anyio

DEV_RCD = rcd_hash_from_fct_address(devnet.DEV_FCT_ADDRESS)
EC_PUB = public_key_from_ec_address(devnet.DEV_EC_ADDRESS)
UNKNOWN = "ab" * 32


def keys(result: dict[str, Any]) -> set[str]:
    return set(result)


# -- status ------------------------------------------------------------------------------


async def test_properties_carry_spec_and_factomd_names(node: NodeHarness) -> None:
    props = await node.call("properties")
    assert keys(props) >= {"nodeversion", "nodeapiversion", "factomdversion", "factomdapiversion"}
    assert props["factomdapiversion"] == props["nodeapiversion"] == "2.0"


async def test_heights_and_current_minute(node: NodeHarness) -> None:
    heights = await node.call("heights")
    assert heights == {
        "directoryblockheight": 0,
        "leaderheight": 1,
        "entryblockheight": 0,
        "entryheight": 0,
    }
    await node.next_minute()
    assert (await node.call("heights"))["leaderheight"] == 0  # past minute 0: synced
    minute = await node.call("current-minute")
    assert keys(minute) == {
        "leaderheight", "directoryblockheight", "minute", "currentblockstarttime",
        "currentminutestarttime", "currenttime", "directoryblockinseconds", "stalldetected",
        "faulttimeout", "roundtimeout",
    }  # fmt: skip
    assert minute["minute"] == 1 and minute["leaderheight"] == 0  # agrees with heights
    assert minute["currentminutestarttime"] > minute["currentblockstarttime"]
    assert minute["currenttime"] == int(node.clock.now() * 1e9)
    assert minute["stalldetected"] is False


async def test_leader_height_agrees_in_every_minute(node: NodeHarness) -> None:
    """heights, current-minute and diagnostics name one leader height in minutes 0 to 9."""
    for _ in range(12):  # through a block boundary
        heights = await node.call("heights")
        minute = await node.call("current-minute")
        diag = await node.call("diagnostics")
        expected = heights["directoryblockheight"] + (1 if minute["minute"] == 0 else 0)
        assert heights["leaderheight"] == minute["leaderheight"] == expected
        assert diag["leaderheight"] == expected
        await node.next_minute()


async def test_authorities_names_the_node_identity(node: NodeHarness) -> None:
    result = await node.call("authorities")
    diag = await node.call("diagnostics")
    (authority,) = result["authorities"]
    assert keys(authority) == {
        "chainid", "manageid", "matroyshka", "signingkey", "status", "anchorkeys",
    }  # fmt: skip
    assert authority["chainid"] == diag["id"] and authority["signingkey"] == diag["publickey"]
    assert authority["status"] == "federated" and authority["anchorkeys"] == []


async def test_diagnostics_and_rates(node: NodeHarness) -> None:
    diag = await node.call("diagnostics")
    assert keys(diag) >= {
        "name", "id", "publickey", "role", "leaderheight", "currentheight", "currentminute",
        "currentminuteduration", "previousminuteduration", "balancehash", "tempbalancehash",
        "lastblockfromdbstate", "syncing", "authset", "elections",
    }  # fmt: skip
    assert keys(diag["syncing"]) == {"status", "received", "expected", "missing"}
    assert keys(diag["authset"]["leaders"][0]) == {
        "id",
        "vm",
        "listheight",
        "listlength",
        "nextnil",
    }
    assert diag["elections"]["inprogress"] is False
    assert (await node.call("entry-credit-rate")) == {"rate": node.settings.ec_rate}
    assert keys(await node.call("tps-rate")) == {"totaltxrate", "instanttxrate"}


# -- balances ------------------------------------------------------------------------------


async def test_balances_by_address_and_raw_hex(node: NodeHarness) -> None:
    ec = await node.call("entry-credit-balance", {"address": devnet.DEV_EC_ADDRESS})
    assert ec == {"balance": devnet.DEV_GENESIS_CREDITS}
    assert await node.call("entry-credit-balance", {"address": EC_PUB.hex()}) == ec
    fct = await node.call("coin-balance", {"address": devnet.DEV_FCT_ADDRESS})
    assert fct == await node.call("factoid-balance", {"address": DEV_RCD.hex()})
    assert fct["balance"] > 0
    err = await node.error("entry-credit-balance", {"address": devnet.DEV_FCT_ADDRESS})
    assert err["code"] == -32602 and err["data"] == "Invalid Address"


async def test_multiple_balances(node: NodeHarness) -> None:
    result = await node.call(
        "multiple-ec-balances", {"addresses": [devnet.DEV_EC_ADDRESS, "ECnonsense"]}
    )
    assert keys(result) == {"currentheight", "lastsavedheight", "balances"}
    good, bad = result["balances"]
    assert good == {
        "ack": devnet.DEV_GENESIS_CREDITS,
        "saved": devnet.DEV_GENESIS_CREDITS,
        "err": "",
    }
    assert bad["err"] and bad["ack"] == 0
    await submit(node, coin_tx(node, 10**8))
    fct = await node.call("multiple-fct-balances", {"addresses": [devnet.DEV_FCT_ADDRESS]})
    (entry,) = fct["balances"]
    assert entry["ack"] < entry["saved"]  # the pending spend is acknowledged, not saved


# -- writes --------------------------------------------------------------------------------


async def test_commit_and_reveal_results(node: NodeHarness) -> None:
    first = Entry.first_entry([b"methods"], b"content")
    commit = CommitChain.create(node.ec_key, first, timestamp_ms=node.service.now_ms())
    reveal = await node.call("reveal-chain", {"entry": first.marshal().hex()})  # held first
    assert reveal == {
        "message": "Entry Reveal Success",
        "entryhash": first.hash().hex(),
        "chainid": first.chain_id.hex(),
    }
    result = await node.call("commit-chain", {"message": commit.marshal().hex()})
    assert result == {
        "message": "Chain Commit Success",
        "txid": commit.txid().hex(),
        "entryhash": first.hash().hex(),
        "chainidhash": commit.chain_id_hash.hex(),
        "chainid": first.chain_id.hex(),
    }
    entry = Entry(first.chain_id, (), b"second")
    commit_e = CommitEntry.create(node.ec_key, entry, timestamp_ms=node.service.now_ms())
    assert await node.call("commit-entry", {"message": commit_e.marshal().hex()}) == {
        "message": "Entry Commit Success",
        "txid": commit_e.txid().hex(),
        "entryhash": entry.hash().hex(),
    }
    assert (await node.call("reveal-entry", {"entry": entry.marshal().hex()}))["chainid"] == (
        first.chain_id.hex()
    )


async def test_commit_chain_names_the_chain_in_every_order(node: NodeHarness) -> None:
    """``chainid`` is always in the result: from the caller's ``chainid``, else null."""
    first = Entry.first_entry([b"commit", b"first"], b"")
    commit = CommitChain.create(node.ec_key, first, timestamp_ms=node.service.now_ms())
    bare = await node.call("commit-chain", {"message": commit.marshal().hex()})
    assert bare["chainid"] is None  # commit before reveal: only the hash is known
    assert bare["chainidhash"] == commit.chain_id_hash.hex()
    other = Entry.first_entry([b"commit", b"second"], b"")
    commit2 = CommitChain.create(node.ec_key, other, timestamp_ms=node.service.now_ms())
    wrong = {"message": commit2.marshal().hex(), "chainid": first.chain_id.hex()}
    err = await node.error("commit-chain", wrong)
    assert err["code"] == -32602 and "chainid" in err["data"]
    named = {"message": commit2.marshal().hex(), "chainid": other.chain_id.hex()}
    assert (await node.call("commit-chain", named))["chainid"] == other.chain_id.hex()


async def test_repeated_commit_error_carries_data(node: NodeHarness) -> None:
    entry = Entry.first_entry([b"repeat"], b"")
    commit = CommitChain.create(node.ec_key, entry, timestamp_ms=node.service.now_ms())
    await node.call("commit-chain", {"message": commit.marshal().hex()})
    before = node.service.balance_hash(temporary=True)
    err = await node.error("commit-chain", {"message": commit.marshal().hex()})
    assert err == {
        "code": -32011,
        "message": "Repeated Commit",
        "data": {
            "info": "A commit with equal or greater payment already exists",
            "entryhash": entry.hash().hex(),
        },
    }
    assert node.service.balance_hash(temporary=True) == before


async def test_coin_submit_aliases_and_idempotent_resubmission(node: NodeHarness) -> None:
    tx = coin_tx(node, 12345)
    first = await node.call("coin-submit", {"transaction": tx.marshal().hex()})
    assert first == {"message": "Successfully submitted the transaction", "txid": tx.txid().hex()}
    balance = await node.call("coin-balance", {"address": devnet.DEV_FCT_ADDRESS})
    again = await node.call("factoid-submit", {"transaction": tx.marshal().hex()})
    assert again == first
    assert await node.call("coin-balance", {"address": devnet.DEV_FCT_ADDRESS}) == balance
    assert len(await node.call("pending-transactions")) == 1


async def test_coin_submit_refusals(node: NodeHarness) -> None:
    err = await node.error("coin-submit", {"transaction": "02"})
    assert err["code"] == -32602 and "Invalid Transaction" in err["data"]
    ts = node.service.now_ms()
    broke = Transaction(ts, (TxAddress(2**64 - 1, DEV_RCD),), (TxAddress(1, DEV_RCD),)).sign(
        [FCT_KEY]
    )
    err = await node.error("coin-submit", {"transaction": broke.marshal().hex()})
    assert err["code"] == -32602


# -- pending, acks, lookups ----------------------------------------------------------------


async def test_pending_lists_and_statuses(node: NodeHarness) -> None:
    chain = await node.publish_chain([b"pending"])
    entry = await node.publish_entry(chain.chain_id, b"one")
    held = Entry(chain.chain_id, (), b"no commit yet")
    await node.call("reveal-entry", {"entry": held.marshal().hex()})
    tx = coin_tx(node, 777)
    await submit(node, tx)

    pending = await node.call("pending-entries", {})
    statuses = {p["entryhash"]: p["status"] for p in pending}
    assert statuses[entry.hash().hex()] == "TransactionACK"
    assert statuses[held.hash().hex()] == "NotConfirmed"
    assert all(keys(p) == {"entryhash", "chainid", "status"} for p in pending)
    assert await node.call("pending-entries", {"chainid": UNKNOWN}) == []
    txs = await node.call("pending-transactions", {"address": devnet.DEV_FCT_ADDRESS})
    assert [t["transactionid"] for t in txs] == [tx.txid().hex()]
    assert keys(txs[0]) == {
        "transactionid", "dbheight", "status", "inputs", "outputs", "ecoutputs", "fees",
    }  # fmt: skip
    other = fct_public_address(bytes(32))
    assert await node.call("pending-transactions", {"address": other}) == []
    assert (await node.error("pending-transactions", {"address": "FA" + "1" * 50}))[
        "code"
    ] == -32602

    ack = await node.call("ack", {"hash": entry.hash().hex(), "chainid": chain.chain_id.hex()})
    assert ack["entrydata"]["status"] == "TransactionACK"
    assert ack["commitdata"]["status"] == "TransactionACK"
    coin = await node.call("coin-ack", {"txid": tx.txid().hex()})
    assert keys(coin) == {
        "txid", "transactiondate", "transactiondatestring", "blockdate", "blockdatestring", "status",
    }  # fmt: skip
    assert coin["status"] == "TransactionACK" and coin["transactiondate"] == tx.timestamp_ms

    await node.next_block()
    assert await node.call("pending-transactions") == []
    assert [p["status"] for p in await node.call("pending-entries")] == ["NotConfirmed"]
    by_full = await node.call("factoid-ack", {"fulltransaction": tx.marshal().hex()})
    assert by_full["status"] == "DBlockConfirmed" and by_full["blockdate"] > 0
    f_ack = await node.call("ack", {"hash": tx.txid().hex(), "chainid": "f"})
    assert f_ack == by_full
    e_ack = await node.call("entry-ack", {"txid": entry.hash().hex()})
    assert e_ack["entrydata"]["status"] == "DBlockConfirmed"
    assert e_ack["commitdata"]["status"] == "DBlockConfirmed"
    assert e_ack["commitdata"]["transactiondatestring"]
    assert e_ack == await node.call(
        "ack", {"chainid": chain.chain_id.hex(), "fulltransaction": entry.marshal().hex()}
    )


async def test_commit_ack_and_commit_transaction(node: NodeHarness) -> None:
    chain = await node.publish_chain([b"commit-ack"])
    entry = Entry(chain.chain_id, (), b"x")
    commit = CommitEntry.create(node.ec_key, entry, timestamp_ms=node.service.now_ms())
    await node.call("commit-entry", {"message": commit.marshal().hex()})
    ack = await node.call("ack", {"hash": commit.txid().hex(), "chainid": "c"})
    assert ack["committxid"] == commit.txid().hex()
    assert ack["entryhash"] == entry.hash().hex()
    assert ack["commitdata"]["status"] == "TransactionACK"
    assert ack["commitdata"]["transactiondate"] == node.service.now_ms() // 1000  # seconds
    by_full = await node.call("ack", {"chainid": "c", "fulltransaction": commit.marshal().hex()})
    assert by_full == ack
    await node.next_block()
    ack = await node.call("ack", {"hash": commit.txid().hex(), "chainid": "c"})
    assert ack["commitdata"]["status"] == "DBlockConfirmed"
    tx = await node.call("transaction", {"hash": commit.txid().hex()})
    assert tx["ectransaction"]["entryhash"] == entry.hash().hex()
    assert tx["includedindirectoryblockheight"] == 1
    unknown = await node.call("ack", {"hash": UNKNOWN, "chainid": "c"})
    assert unknown["commitdata"]["status"] == "Unknown"


async def test_transaction_lookups(node: NodeHarness) -> None:
    tx = coin_tx(node, 4242)
    await submit(node, tx)
    pending = await node.call("transaction", {"hash": tx.txid().hex()})
    assert pending["includedindirectoryblockheight"] == -1
    assert pending["cointransaction"]["txid"] == tx.txid().hex()
    chain = await node.publish_chain([b"tx lookups"])
    await node.next_block()
    found = await node.call("transaction", {"hash": tx.full_hash().hex()})
    assert keys(found) == {
        "cointransaction", "factoidtransaction", "includedintransactionblock",
        "includedindirectoryblock", "includedindirectoryblockheight",
    }  # fmt: skip
    assert found["includedindirectoryblockheight"] == 1
    assert found["cointransaction"]["blockheight"] == 0
    by_entry = await node.call("transaction", {"hash": chain.hash().hex()})
    assert by_entry["entry"]["chainid"] == chain.chain_id.hex()
    assert by_entry["includedindirectoryblockheight"] == 1
    err = await node.error("transaction", {"hash": UNKNOWN})
    assert err["code"] == -32008


async def test_entry_chain_head_receipt_and_raw_data(node: NodeHarness) -> None:
    chain = await node.publish_chain([b"lookups"], b"first content")
    assert (await node.error("entry", {"hash": chain.hash().hex()}))["code"] == -32008
    head = await node.call("chain-head", {"chainid": chain.chain_id.hex()})
    assert head == {"chainhead": "", "chaininprocesslist": True}
    assert (await node.error("receipt", {"hash": chain.hash().hex()}))["code"] == -32010
    raw = await node.call("raw-data", {"hash": chain.hash().hex()})  # pending entries too
    assert raw["data"] == chain.marshal().hex()

    await node.next_block()
    assert await node.call("entry", {"hash": chain.hash().hex()}) == {
        "chainid": chain.chain_id.hex(),
        "extids": [b"lookups".hex()],
        "content": b"first content".hex(),
    }
    head = await node.call("chain-head", {"chainid": chain.chain_id.hex()})
    assert head["chaininprocesslist"] is False and len(head["chainhead"]) == 64
    receipt = (await node.call("receipt", {"hash": chain.hash().hex(), "includerawentry": True}))[
        "receipt"
    ]
    assert keys(receipt) == {
        "entry", "merklebranch", "entryblockkeymr", "directoryblockkeymr", "directoryblockheight",
    }  # fmt: skip
    assert receipt["entry"]["raw"] == chain.marshal().hex()
    assert receipt["entryblockkeymr"] == head["chainhead"]
    err = await node.error("chain-head", {"chainid": UNKNOWN})
    assert err["code"] == -32009 and err["message"] == "Missing Chain Head"
    assert (await node.error("raw-data", {"hash": UNKNOWN}))["code"] == -32008


async def test_block_methods_noraw_and_not_found(node: NodeHarness) -> None:
    for method in ("dblock-by-height", "ablock-by-height", "ecblock-by-height", "fblock-by-height"):
        full = await node.call(method, {"height": 0})
        assert "rawdata" in full
        assert "rawdata" not in await node.call(method, {"height": 0, "noraw": True})
        err = await node.error(method, {"height": 5})
        assert err["code"] == -32008 and err["message"] == "Block not found"
        assert (await node.error(method, {"height": -1}))["code"] == -32602
        assert (await node.error(method, {"height": "0"}))["code"] == -32602
    dblock = (await node.call("dblock-by-height", {"height": 0}))["dblock"]
    a_key, c_key, f_key = (e["keymr"] for e in dblock["dbentries"])
    assert "rawdata" not in await node.call("admin-block", {"keymr": a_key, "noraw": True})
    assert (await node.call("entrycredit-block", {"keymr": c_key}))["ecblock"][
        "headerhash"
    ] == c_key
    assert (await node.call("coin-block", {"keymr": f_key}))["fblock"]["keymr"] == f_key
    for method in (
        "admin-block",
        "entrycredit-block",
        "coin-block",
        "directory-block",
        "entry-block",
    ):
        assert (await node.error(method, {"keymr": UNKNOWN}))["code"] == -32008
    assert (await node.call("directory-block-head"))["keymr"] == dblock["keymr"]


async def test_send_raw_message(node: NodeHarness) -> None:
    first = Entry.first_entry([b"raw message"], b"")
    commit = CommitChain.create(node.ec_key, first, timestamp_ms=node.service.now_ms())
    ok = {"message": "Successfully sent the message"}
    assert await node.call("send-raw-message", {"message": "05" + commit.marshal().hex()}) == ok
    reveal_msg = "0d" + (node.service.now_ms()).to_bytes(6, "big").hex() + first.marshal().hex()
    assert await node.call("send-raw-message", {"message": reveal_msg}) == ok
    assert node.service.entry_status(first.hash()) == "TransactionACK"
    tx = coin_tx(node, 99)
    assert await node.call("send-raw-message", {"message": "09" + tx.marshal().hex()}) == ok
    assert node.service.find_transaction(tx.txid()) is not None
    for bad in ("", "ff00", "06" + "00" * 10):
        assert (await node.error("send-raw-message", {"message": bad}))["code"] == -32602


async def test_ack_validates_its_chain_id(node: NodeHarness) -> None:
    err = await node.error("ack", {"hash": UNKNOWN, "chainid": "x"})
    assert err["code"] == -32602
    err = await node.error("ack", {"chainid": "f"})
    assert err["code"] == -32602
    err = await node.error("ack", {"chainid": "f", "fulltransaction": "00"})
    assert err["code"] == -32602 and "Invalid Transaction" in err["data"]
    assert (await node.error("entry-ack", {}))["code"] == -32602


# -- the JSON-RPC envelope -------------------------------------------------------------------


async def test_envelope_batch_notification_get_and_text_plain(node: NodeHarness) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "heights"},
        {"jsonrpc": "2.0", "method": "heights"},  # notification: no reply
        {"jsonrpc": "2.0", "id": 2, "method": "no-such-method"},
    ]
    response = await node.client.post("/v2", json=batch)
    assert response.status_code == 200
    replies = response.json()
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["error"]["code"] == -32601
    note = await node.client.post("/v2", json={"jsonrpc": "2.0", "method": "heights"})
    assert note.status_code == 204 and note.content == b""
    body = b'{"jsonrpc": "2.0", "id": 7, "method": "properties"}'
    plain = await node.client.post("/v2", content=body, headers={"content-type": "text/plain"})
    assert plain.status_code == 200 and plain.json()["id"] == 7
    got = await node.client.request("GET", "/v2", content=body)
    assert got.status_code == 200 and "result" in got.json()
    broken = await node.client.post("/v2", content=b"{not json")
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700


async def test_batch_commit_then_reveal_takes_effect_in_order(node: NodeHarness) -> None:
    chain = await node.publish_chain([b"batch"])
    entries = [Entry(chain.chain_id, (), b"%d" % i) for i in range(20)]
    batch = []
    for i, entry in enumerate(entries):
        commit = CommitEntry.create(node.ec_key, entry, timestamp_ms=node.service.now_ms())
        batch.append({"jsonrpc": "2.0", "id": 2 * i, "method": "commit-entry",
                      "params": {"message": commit.marshal().hex()}})  # fmt: skip
        batch.append({"jsonrpc": "2.0", "id": 2 * i + 1, "method": "reveal-entry",
                      "params": {"entry": entry.marshal().hex()}})  # fmt: skip
    replies = (await node.client.post("/v2", json=batch)).json()
    assert [r["id"] for r in replies] == list(range(40))
    assert all("result" in r for r in replies)
    assert not node.service.rules.held  # each reveal found its commit already applied
    items = node.service.process_list.eblock_items[chain.chain_id]
    assert items[1:] == [e.hash() for e in entries]
