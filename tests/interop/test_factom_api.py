"""The ``factom-api`` package (``Factomd``, ``FactomWalletd``), unchanged, against the node
and the wallet: every method it offers for blocks, chains and entries, receipts, anchors,
balances, coin transactions and addresses, and every error code it knows, raised as its
own exception class.

``factom-api`` treats a reply as an error only when its HTTP status is 400 or more (and
then maps ``error.code`` to a class); the node and the wallet answer errors with 400, as
factomd and factom-walletd do. Its code table has no entry for the wallet's -32001
(wallet locked) and -32003 (incorrect passphrase), so for those it raises ``KeyError``
from its own table, against factom-walletd as against this wallet
(``test_codes_the_client_does_not_know``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factom import Factomd, FactomWalletd
from factom import exceptions as fx
from factom.exceptions import handle_error_response

from ledger import devnet
from ledger.wallet import WalletSettings
from ledger.wallet import create_app as create_wallet_app
from tests.harness.servers import AppServer
from tests.harness.waiting import wait_until
from tests.interop.conftest import RunningStack
from tests.ledger.wallet.conftest import FAST_KDF

pytestmark = pytest.mark.e2e

KOINIFY_WORDS = (
    "yellow yellow yellow yellow yellow yellow yellow yellow yellow yellow yellow yellow"
)
KOINIFY_ADDRESS = "FA3cih2o2tjEUsnnFR4jX1tQXPpSXFwsp3rhVp6odL5PNCHWvZV1"  # formats 3.4


@pytest.fixture(scope="module")
def factomd(running: RunningStack) -> Factomd:
    return Factomd(
        host=running.node_host, ec_address=devnet.DEV_EC_ADDRESS, fct_address=devnet.DEV_FCT_ADDRESS
    )


@pytest.fixture(scope="module")
def walletd(running: RunningStack) -> FactomWalletd:
    return FactomWalletd(
        host=running.wallet_host,
        ec_address=devnet.DEV_EC_ADDRESS,
        fct_address=devnet.DEV_FCT_ADDRESS,
    )


@pytest.fixture(scope="module")
def chain(factomd: Factomd, walletd: FactomWalletd) -> dict[str, Any]:
    """A chain with two entries made through the client's shortcuts, once in a block."""
    tag = uuid.uuid4().hex.encode()
    made = walletd.new_chain(factomd, [b"factom-api", tag], b"first", sleep=0)
    assert made["message"] == "Entry Reveal Success"
    chain_id = made["chainid"]
    second = walletd.new_entry(factomd, chain_id, [b"second"], b"two", sleep=0)
    third = walletd.new_entry(factomd, chain_id, [b"third"], "7468726565", sleep=0)  # hex str
    hashes = [made["entryhash"], second["entryhash"], third["entryhash"]]
    wait_until(
        lambda: _recorded(factomd, hashes[-1]),
        timeout_s=60,
        interval_s=0.1,
        what="the entries in a block",
    )
    return {"chain_id": chain_id, "hashes": hashes, "tag": tag}


def _recorded(factomd: Factomd, entry_hash: str) -> bool | None:
    try:
        factomd.receipt(entry_hash)
    except fx.ReceiptCreationError:
        return None
    return True


def _next_block(factomd: Factomd) -> None:
    start = factomd.heights()["directoryblockheight"]
    wait_until(
        lambda: factomd.heights()["directoryblockheight"] > start or None,
        timeout_s=60,
        interval_s=0.1,
        what="a new block",
    )


# -- node: status, rates, heights -----------------------------------------------------------


def test_status_methods(factomd: Factomd) -> None:
    props = factomd.properties()
    assert props["factomdapiversion"] == "2.0"
    heights = factomd.heights()
    minute = factomd.current_minute()
    assert minute["directoryblockheight"] == heights["directoryblockheight"] or (
        minute["directoryblockheight"] == heights["directoryblockheight"] + 1  # a block closed
    )
    assert set(minute) >= {"leaderheight", "minute", "directoryblockinseconds"}
    assert factomd.entry_credit_rate()["rate"] > 0


# -- node: chains, entries, receipts ----------------------------------------------------------


def test_entries_chain_head_and_reading_the_chain(factomd: Factomd, chain: dict[str, Any]) -> None:
    chain_id, hashes = chain["chain_id"], chain["hashes"]
    first = factomd.entry(hashes[0])
    assert first["extids"] == [b"factom-api", chain["tag"]] and first["content"] == b"first"
    assert factomd.entry(hashes[2], encode_as_hex=True)["content"] == b"three".hex()
    head = factomd.chain_head(chain_id)
    assert head["chaininprocesslist"] is False
    block = factomd.entry_block(head["chainhead"])
    assert block["header"]["chainid"] == chain_id
    read = list(factomd.read_chain(chain_id, include_entry_context=True))
    assert [e["entryhash"] for e in read] == hashes
    assert [e["content"] for e in read] == [b"first", b"two", b"three"]
    height = read[0]["dbheight"]
    at_height = list(factomd.entries_at_height(chain_id, height))
    assert at_height and at_height[0]["content"] == b"first"
    assert list(factomd.read_chain(chain_id, from_height=10**9)) == []
    in_block = list(factomd.entries_in_entry_block(block, encode_as_hex=True))
    assert in_block[-1]["content"] == b"three".hex()


def test_receipt_walks_to_the_directory_block(factomd: Factomd, chain: dict[str, Any]) -> None:
    entry_hash = chain["hashes"][1]
    receipt = factomd.receipt(entry_hash, include_raw_entry=True)["receipt"]
    raw = bytes.fromhex(receipt["entry"]["raw"])
    assert hashlib.sha256(hashlib.sha512(raw).digest() + raw).hexdigest() == entry_hash
    current = bytes.fromhex(entry_hash)
    for node in receipt["merklebranch"]:
        left, right = bytes.fromhex(node["left"]), bytes.fromhex(node["right"])
        assert current in (left, right)
        current = hashlib.sha256(left + right).digest()
    assert current.hex() == receipt["directoryblockkeymr"]
    dblock = factomd.directory_block_by_height(receipt["directoryblockheight"])["dblock"]
    assert dblock["keymr"] == receipt["directoryblockkeymr"]
    assert "raw" not in factomd.receipt(entry_hash)["receipt"]["entry"]


def test_pending_entries_and_transaction_of_an_entry(
    factomd: Factomd, walletd: FactomWalletd, chain: dict[str, Any]
) -> None:
    made = walletd.new_entry(factomd, chain["chain_id"], [b"pending"], b"p", sleep=0)
    pending = [p["entryhash"] for p in factomd.pending_entries()]
    assert made["entryhash"] in pending or _recorded(factomd, made["entryhash"])  # or since
    recorded = factomd.transaction(chain["hashes"][0])
    assert recorded["includedindirectoryblockheight"] >= 0
    assert recorded["entry"]["chainid"] == chain["chain_id"]
    wait_until(
        lambda: _recorded(factomd, made["entryhash"]),
        timeout_s=60,
        interval_s=0.1,
        what="the pending entry recorded",
    )
    assert made["entryhash"] not in [p["entryhash"] for p in factomd.pending_entries()]


def test_commit_and_reveal_by_hand(factomd: Factomd, walletd: FactomWalletd) -> None:
    tag = uuid.uuid4().hex
    composed = walletd._request(  # the client has no compose method but uses it internally
        "compose-chain",
        {"chain": {"firstentry": {"extids": [tag.encode().hex()], "content": ""}},
         "ecpub": devnet.DEV_EC_ADDRESS},
    )  # fmt: skip
    message = composed["commit"]["params"]["message"]
    committed = factomd.commit_chain(bytes.fromhex(message))
    assert committed["message"] == "Chain Commit Success"
    assert set(committed) >= {"txid", "entryhash", "chainidhash", "chainid"}
    assert committed["chainid"] is None  # only the hash is known before the reveal
    revealed = factomd.reveal_chain(composed["reveal"]["params"]["entry"])
    assert revealed["entryhash"] == committed["entryhash"]
    entry = walletd._request(
        "compose-entry",
        {"entry": {"chainid": revealed["chainid"], "extids": [], "content": "00"},
         "ecpub": devnet.DEV_EC_ADDRESS},
    )  # fmt: skip
    assert factomd.commit_entry(entry["commit"]["params"]["message"])["message"] == (
        "Entry Commit Success"
    )
    assert (
        factomd.reveal_entry(entry["reveal"]["params"]["entry"])["chainid"] == revealed["chainid"]
    )
    raw = walletd._request(
        "compose-entry",
        {"entry": {"chainid": revealed["chainid"], "extids": [], "content": "01"},
         "ecpub": devnet.DEV_EC_ADDRESS},
    )  # fmt: skip
    commit = bytes.fromhex(raw["commit"]["params"]["message"])
    entry_bytes = bytes.fromhex(raw["reveal"]["params"]["entry"])
    sent = factomd.send_raw_message(bytes([6]) + commit)  # network message: CommitEntry
    assert sent["message"] == "Successfully sent the message"
    factomd.send_raw_message(bytes([13]) + commit[1:7] + entry_bytes)  # RevealEntry
    entry_hash = hashlib.sha256(hashlib.sha512(entry_bytes).digest() + entry_bytes).hexdigest()
    wait_until(
        lambda: _recorded(factomd, entry_hash),
        timeout_s=60,
        interval_s=0.1,
        what="the raw-message entry recorded",
    )
    assert factomd.raw_data(entry_hash)["data"] == entry_bytes.hex()


# -- node: blocks ----------------------------------------------------------------------------


def test_every_block_by_height_and_by_key(factomd: Factomd, chain: dict[str, Any]) -> None:
    head = factomd.directory_block_head()["keymr"]
    by_key = factomd.directory_block_by_keymr(head)
    height = by_key["header"]["sequencenumber"]
    by_height = factomd.directory_block_by_height(height)
    assert by_height["dblock"]["keymr"] == head
    admin = factomd.admin_block_by_height(height)
    assert factomd.admin_block(admin["ablock"]["lookuphash"])["rawdata"] == admin["rawdata"]
    ec = factomd.entry_credit_block_by_height(height)
    ec_key = next(
        e["keymr"] for e in by_height["dblock"]["dbentries"] if e["chainid"].endswith("c")
    )
    assert factomd.entry_credit_block(ec_key)["rawdata"] == ec["rawdata"]
    fblock = factomd.factoid_block_by_height(height)
    assert factomd.factoid_block_by_keymr(fblock["fblock"]["keymr"])["rawdata"] == fblock["rawdata"]
    raw = factomd.raw_data(head)["data"]
    assert raw == by_height["rawdata"]


def test_anchors_by_height_and_by_hash(factomd: Factomd, chain: dict[str, Any]) -> None:
    entry_hash = chain["hashes"][0]
    height = factomd.receipt(entry_hash)["receipt"]["directoryblockheight"]
    anchored = _anchored(factomd, height)
    assert anchored["directoryblockheight"] == height
    assert factomd.anchors(object_hash=entry_hash) == factomd.anchors(height=height)
    assert len(anchored["anchor_pow"]["blockhash"]) == 64


def _anchored(factomd: Factomd, height: int) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        answer = factomd.anchors(height=height)
        return answer if answer["anchor_pow"] else None

    return wait_until(
        probe, timeout_s=60, interval_s=0.1, what=f"directory block {height} anchored"
    )


# -- balances, coin transactions, addresses ----------------------------------------------------


def test_balances(factomd: Factomd) -> None:
    ec = factomd.entry_credit_balance()["balance"]
    fct = factomd.factoid_balance()["balance"]
    assert ec > 0 and fct > 0
    many = factomd.multiple_entry_credit_balances([devnet.DEV_EC_ADDRESS, "ECnonsense"])
    (good, bad) = many["balances"]
    assert 0 < good["ack"] <= good["saved"] and good["err"] == ""  # pending spends only
    assert bad["err"] and set(many) >= {"currentheight", "lastsavedheight"}
    coins = factomd.multiple_factoid_balances([devnet.DEV_FCT_ADDRESS])
    assert coins["balances"][0]["saved"] > 0 and coins["balances"][0]["err"] == ""


def test_coin_transactions_step_by_step(factomd: Factomd, walletd: FactomWalletd) -> None:
    target = walletd.generate_factoid_address()["public"]
    credits_to = walletd.generate_entry_credit_address()["public"]
    rate = factomd.entry_credit_rate()["rate"]
    name = f"tx-{uuid.uuid4().hex[:8]}"
    created = walletd.new_transaction(name)
    assert created["name"] == name and created["signed"] is False
    walletd.add_input(name, 2 * 10**8 + 10 * rate)  # inputs = outputs, then the fee on top
    walletd.add_output(name, 2 * 10**8, target)
    walletd.add_ec_output(name, 10 * rate, credits_to)
    with_fee = walletd.add_fee(name)
    assert with_fee["feespaid"] == with_fee["feesrequired"] > 0
    listed = walletd.temporary_transactions()["transactions"]
    assert name in [t["name"] for t in listed]
    signed = walletd.sign_transaction(name)
    assert signed["signed"] is True
    call = walletd.compose_transaction(name)
    assert call["method"] in {"factoid-submit", "coin-submit"}
    submitted = factomd.factoid_submit(call["params"]["transaction"])
    assert submitted["txid"] == signed["txid"]
    txid = submitted["txid"]
    pending = [p["transactionid"] for p in factomd.pending_transactions()]
    height = factomd.transaction(txid)["includedindirectoryblockheight"]
    assert txid in pending or height >= 0  # pending when asked, or recorded since
    wait_until(
        lambda: factomd.transaction(txid)["includedindirectoryblockheight"] >= 0 or None,
        timeout_s=60,
        interval_s=0.1,
        what="the transaction in a block",
    )
    assert factomd.factoid_balance(target)["balance"] == 2 * 10**8
    assert factomd.entry_credit_balance(credits_to)["balance"] == 10
    by_txid = walletd.transactions_by_txid(submitted["txid"])["transactions"]
    assert [t["txid"] for t in by_txid] == [submitted["txid"]]
    by_address = walletd.transactions_by_address(target)["transactions"]
    assert submitted["txid"] in [t["txid"] for t in by_address]
    top = factomd.heights()["directoryblockheight"]
    in_range = walletd.transactions_by_range(0, top)["transactions"]
    assert submitted["txid"] in [t["txid"] for t in in_range]


def test_sub_fee_and_delete_transaction(walletd: FactomWalletd, factomd: Factomd) -> None:
    target = walletd.generate_factoid_address()["public"]
    name = f"sub-{uuid.uuid4().hex[:8]}"
    walletd.new_transaction(name)
    walletd.add_input(name, 10**8)
    walletd.add_output(name, 10**8, target)
    reduced = walletd.sub_fee(name, target)
    assert (
        reduced["outputs"][0]["amount"] < 10**8 and reduced["feespaid"] == reduced["feesrequired"]
    )
    deleted = walletd.delete_transaction(name)
    assert deleted["name"] == name
    assert name not in [t["name"] for t in walletd.temporary_transactions()["transactions"] or []]


def test_shortcuts_fct_to_ec_and_fct_to_fct(factomd: Factomd, walletd: FactomWalletd) -> None:
    credits_to = walletd.generate_entry_credit_address()["public"]
    coins_to = walletd.generate_factoid_address()["public"]
    rate = factomd.entry_credit_rate()["rate"]
    to_ec = walletd.fct_to_ec(factomd, 5 * rate, ec_address=credits_to)
    to_fct = walletd.fct_to_fct(factomd, 12345, coins_to)
    assert len(to_ec["txid"]) == len(to_fct["txid"]) == 64
    wait_until(
        lambda: factomd.entry_credit_balance(credits_to)["balance"] == 5 or None,
        timeout_s=60,
        interval_s=0.1,
        what="the credits bought",
    )
    wait_until(
        lambda: factomd.factoid_balance(coins_to)["balance"] == 12345 or None,
        timeout_s=60,
        interval_s=0.1,
        what="the coins sent",
    )


def test_addresses_and_backup(walletd: FactomWalletd) -> None:
    assert walletd.properties()["walletapiversion"] == "2.0"
    assert walletd.get_height()["height"] >= 0
    ec = walletd.address(devnet.DEV_EC_ADDRESS)
    assert ec == {"public": devnet.DEV_EC_ADDRESS, "secret": devnet.DEV_EC_SECRET}
    imported = walletd.import_address("Fs1KWJrpLdfucvmYwN2nWrwepLn8ercpMbzXshd1g8zyhKXLVLWj")
    assert (
        imported["addresses"][0]["public"] == "FA1zT4aFpEvcnPqPCigB3fvGu4Q4mTXY22iiuV69DqE1pNhdF2MC"
    )
    both = walletd.import_addresses(
        [
            "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG",
            "Fs1jQGc9GJjyWNroLPq7x6LbYQHveyjWNPXSqAvCEKpETNoTU5dP",
        ]
    )
    assert [a["public"] for a in both["addresses"]] == [
        "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r",
        "FA22de5NSG2FA2HmMaD4h8qSAZAJyztmmnwgLPghCQKoSekwYYct",
    ]
    assert walletd.import_koinify(KOINIFY_WORDS)["public"] == KOINIFY_ADDRESS
    publics = {a["public"] for a in walletd.all_addresses()["addresses"]}
    assert {devnet.DEV_FCT_ADDRESS, KOINIFY_ADDRESS} <= publics
    backup = walletd.wallet_backup()
    assert len(backup["wallet-seed"].split()) == 12 and backup["addresses"]
    balances = walletd.wallet_balances()
    assert balances["fctaccountbalances"]["saved"] > 0
    assert balances["ecaccountbalances"]["ack"] > 0


# -- errors ----------------------------------------------------------------------------------


def _raises(expected: type[fx.FactomAPIError], call: Callable[[], Any], code: int) -> None:
    with pytest.raises(expected) as caught:
        call()
    assert type(caught.value) is expected and caught.value.code == code
    assert caught.value.response.status_code == 400


def test_every_node_error_is_its_own_exception(factomd: Factomd, walletd: FactomWalletd) -> None:
    _raises(fx.BlockNotFound, lambda: factomd.directory_block_by_height(10**8), -32008)
    _raises(fx.BlockNotFound, lambda: factomd.entry("ab" * 32), -32008)
    _raises(fx.MissingChainHead, lambda: factomd.chain_head("ab" * 32), -32009)
    _raises(fx.ReceiptCreationError, lambda: factomd.receipt("ab" * 32), -32010)
    tag = uuid.uuid4().hex.encode().hex()
    composed = walletd._request(
        "compose-chain",
        {"chain": {"firstentry": {"extids": [tag], "content": ""}}, "ecpub": devnet.DEV_EC_ADDRESS},
    )
    message = composed["commit"]["params"]["message"]
    factomd.commit_chain(message)
    _raises(fx.RepeatedCommit, lambda: factomd.commit_chain(message), -32011)
    _raises(fx.InvalidRequest, lambda: factomd._request(None), -32600)  # type: ignore[arg-type]
    _raises(fx.MethodNotFound, lambda: factomd._request("no-such-method"), -32601)
    _raises(fx.InvalidParams, lambda: factomd.entry_credit_balance("ECnonsense"), -32602)
    _raises(fx.InvalidParams, lambda: factomd.commit_entry("00"), -32602)
    parse = factomd.session.post(factomd.url, data=b"{not json")
    _raises(fx.ParseError, lambda: handle_error_response(parse), -32700)


def test_every_wallet_error_is_its_own_exception(walletd: FactomWalletd) -> None:
    _raises(fx.InternalError, lambda: walletd.add_input("no-such-tx", 1), -32603)
    bad_checksum = "FA2jK2HcLnRdS94dEcU27rF3meoJfpUcZPSinpb7AwQvPRY6RL1X"
    _raises(fx.InvalidParams, lambda: walletd.address(bad_checksum), -32602)
    _raises(fx.InvalidParams, lambda: walletd.transactions_by_range(5, 1), -32602)
    _raises(fx.MethodNotFound, lambda: walletd._request("no-such-method"), -32601)
    _raises(fx.InvalidRequest, lambda: walletd._request(None), -32600)  # type: ignore[arg-type]
    _raises(
        fx.MissingChainHead,
        lambda: walletd._request("active-identity-keys", {"chainid": "ab" * 32}),
        -32009,
    )
    parse = walletd.session.post(walletd.url, data=b"[1,")
    _raises(fx.ParseError, lambda: handle_error_response(parse), -32700)


def test_codes_the_client_does_not_know(running: RunningStack, tmp_path: Path) -> None:
    """A locked wallet's -32001 and -32003 are HTTP 400 JSON-RPC errors, as from walletd;
    factom-api 1.1.1 has no class for them and raises ``KeyError`` from its code table."""
    settings = WalletSettings(
        wallet_file=tmp_path / "locked.sqlite",
        node_url=running.node_host + "/v2",
        encrypted=True,
        passphrase="made once",
        **FAST_KDF,
    )
    with AppServer(create_wallet_app(settings), name="wallet"):
        pass  # creates the encrypted wallet file
    reopened = settings.model_copy(update={"passphrase": None})  # starts locked
    with AppServer(create_wallet_app(reopened), name="wallet") as served:
        locked = FactomWalletd(host=served.url)
        for call, code in (
            (locked.all_addresses, -32001),
            (lambda: locked._request("unlock-wallet", {"passphrase": "no", "timeout": 9}), -32003),
        ):
            with pytest.raises(KeyError) as unknown:
                call()
            assert unknown.value.args == (code,)  # the client's table, not KeyError('result')
        reply = locked.session.post(
            locked.url, json={"jsonrpc": "2.0", "id": 1, "method": "all-addresses"}
        )
        assert reply.status_code == 400 and reply.json()["error"]["code"] == -32001
        assert locked.properties()["walletapiversion"] == "2.0"  # open while locked
