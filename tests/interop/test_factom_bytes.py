"""Bytes against independent Factom libraries: ``factom-core`` (blocks, entries, commits,
coin transactions) and ``factom-keys`` (keys and addresses), unchanged.

Two directions: what our node serves (raw blocks, entries, transactions) decodes with
factom-core to the same hashes and key Merkle roots, byte for byte; and what factom-core
and factom-keys build and sign on their own (a chain commit and its first entry, an entry
commit, a coin transaction) is accepted by our node and recorded (submitted with the
``factom-api`` client).
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from typing import Any

import pytest
from factom import Factomd, FactomWalletd
from factom_core.block_elements import (
    ChainCommit,
    Entry,
    EntryCommit,
    FactoidTransaction,
)
from factom_core.blocks import (
    AdminBlock,
    DirectoryBlock,
    EntryBlock,
    EntryCreditBlock,
    FactoidBlock,
)
from factom_core.primitives import FullSignature, FullSignatureList
from factom_keys.ec import ECAddress, ECPrivateKey
from factom_keys.fct import FactoidAddress, FactoidPrivateKey, generate_key_pair

from ledger import devnet
from ledger.core.addresses import ec_public_address, fct_address_from_public_key
from ledger.core.keys import verify_signature
from tests.harness.waiting import wait_until
from tests.interop.conftest import RunningStack

pytestmark = pytest.mark.e2e

FCT_KEY = FactoidPrivateKey(key_string=devnet.DEV_FCT_SECRET)
EC_KEY = ECPrivateKey(key_string=devnet.DEV_EC_SECRET)


@pytest.fixture(scope="module")
def factomd(running: RunningStack) -> Factomd:
    return Factomd(host=running.node_host)


@pytest.fixture(scope="module")
def walletd(running: RunningStack) -> FactomWalletd:
    return FactomWalletd(host=running.wallet_host)


def _sha256d(data: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def _chain_id(ext_ids: list[bytes]) -> bytes:
    digest = hashlib.sha256()
    for ext_id in ext_ids:
        digest.update(hashlib.sha256(ext_id).digest())
    return digest.digest()


def _now_ms() -> int:
    return int(time.time() * 1000)


def _recorded(factomd: Factomd, entry_hash: str) -> dict[str, Any] | None:
    try:
        return factomd.receipt(entry_hash)["receipt"]
    except Exception:  # ReceiptCreationError until it is in a block
        return None


# -- keys --------------------------------------------------------------------------------------


def test_keys_and_addresses_agree_both_ways(walletd: FactomWalletd) -> None:
    assert FCT_KEY.get_factoid_address().to_string() == devnet.DEV_FCT_ADDRESS
    assert EC_KEY.get_ec_address().to_string() == devnet.DEV_EC_ADDRESS
    secret, address = generate_key_pair()
    pub = address.key_bytes
    assert fct_address_from_public_key(pub) == address.to_string()  # our encoding of the same key
    message = b"signed by factom-keys"
    assert verify_signature(pub, message, secret.sign(message))
    imported = walletd.import_address(secret.to_string())["addresses"][0]
    assert imported["public"] == address.to_string()
    generated = walletd.generate_entry_credit_address()
    theirs = ECPrivateKey(key_string=generated["secret"]).get_ec_address()
    assert theirs.to_string() == generated["public"]
    assert ec_public_address(theirs.key_bytes) == generated["public"]
    assert ECAddress(key_string=generated["public"]).key_bytes == theirs.key_bytes


# -- what they build, our node records --------------------------------------------------------


def test_a_chain_and_an_entry_built_by_factom_core(factomd: Factomd) -> None:
    ext_ids = [b"factom-core", uuid.uuid4().bytes]
    chain_id = _chain_id(ext_ids)
    first = Entry(chain_id=chain_id, external_ids=ext_ids, content=b"built elsewhere")
    commit = ChainCommit(
        timestamp=_now_ms(),
        chain_id_hash=_sha256d(chain_id),
        commit_weld=_sha256d(first.entry_hash + chain_id),
        entry_hash=first.entry_hash,
        ec_spent=11,
        ec_public_key=EC_KEY.get_ec_address().key_bytes,
    )
    commit.signature = EC_KEY.sign(commit.marshal_for_signature())
    answer = factomd.commit_chain(commit.marshal())
    assert answer["entryhash"] == first.entry_hash.hex()
    assert answer["chainidhash"] == _sha256d(chain_id).hex()
    revealed = factomd.reveal_chain(first.marshal())
    assert revealed == {
        "message": "Entry Reveal Success",
        "entryhash": first.entry_hash.hex(),
        "chainid": chain_id.hex(),
    }
    second = Entry(chain_id=chain_id, external_ids=[b"second"], content=b"x" * 1500)
    entry_commit = EntryCommit(
        timestamp=_now_ms(),
        entry_hash=second.entry_hash,
        ec_spent=2,  # 1,500 bytes of payload: two credits
        ec_public_key=EC_KEY.get_ec_address().key_bytes,
    )
    entry_commit.signature = EC_KEY.sign(entry_commit.marshal_for_signature())
    factomd.commit_entry(entry_commit.marshal())
    factomd.reveal_entry(second.marshal())
    wait_until(
        lambda: _recorded(factomd, second.entry_hash.hex()),
        timeout_s=60,
        interval_s=0.1,
        what="the entry recorded",
    )
    stored = factomd.entry(second.entry_hash)
    assert stored["content"] == b"x" * 1500 and stored["extids"] == [b"second"]
    raw = bytes.fromhex(factomd.raw_data(second.entry_hash)["data"])
    assert Entry.unmarshal(raw).entry_hash == second.entry_hash


def test_a_coin_transaction_built_by_factom_core(factomd: Factomd) -> None:
    rate = factomd.entry_credit_rate()["rate"]
    _, receiver = generate_key_pair()
    amount = 123_456_789
    fee = rate * (1 + 10 + 1)  # size under 1 KiB, one output, one signature (formats 4.3)
    source = FCT_KEY.get_factoid_address()
    tx = FactoidTransaction(
        timestamp=_now_ms(),
        inputs=[{"value": amount + fee, "fct_address": source.rcd_hash}],
        outputs=[{"value": amount, "fct_address": receiver.rcd_hash}],
        ec_purchases=[],
        rcds=FullSignatureList(),
    )
    signature = FCT_KEY.sign(tx.marshal_for_signature())
    tx.rcds.append(FullSignature(public_key=source.key_bytes, signature=signature))
    assert math.ceil(len(tx.marshal()) / 1024) == 1
    submitted = factomd.factoid_submit(tx.marshal())
    assert submitted["txid"] == tx.tx_id.hex()
    wait_until(
        lambda: factomd.transaction(tx.tx_id)["includedindirectoryblockheight"] >= 0 or None,
        timeout_s=60,
        interval_s=0.1,
        what="the transaction in a block",
    )
    assert factomd.factoid_balance(receiver.to_string())["balance"] == amount
    assert FactoidAddress(address_string=receiver.to_string()).rcd_hash == receiver.rcd_hash


# -- what our node serves, they decode ----------------------------------------------------------


def test_every_block_decodes_to_the_same_hashes(factomd: Factomd) -> None:
    wait_until(
        lambda: factomd.heights()["directoryblockheight"] >= 2 or None,
        timeout_s=60,
        interval_s=0.1,
        what="two blocks",
    )
    for height in range(factomd.heights()["directoryblockheight"] + 1):
        dblock = factomd.directory_block_by_height(height)
        raw = bytes.fromhex(dblock["rawdata"])
        theirs = DirectoryBlock.unmarshal(raw)
        assert theirs.keymr.hex() == dblock["dblock"]["keymr"]
        assert theirs.marshal() == raw
        keys = {e["chainid"][-1]: e["keymr"] for e in dblock["dblock"]["dbentries"][:3]}
        admin = AdminBlock.unmarshal(
            bytes.fromhex(factomd.admin_block_by_height(height)["rawdata"])
        )
        assert admin.lookup_hash.hex() == keys["a"]
        ec_raw = bytes.fromhex(factomd.entry_credit_block_by_height(height)["rawdata"])
        ec_block = EntryCreditBlock.unmarshal(ec_raw)
        assert ec_block.header_hash.hex() == keys["c"] and ec_block.marshal() == ec_raw
        f_raw = bytes.fromhex(factomd.factoid_block_by_height(height)["rawdata"])
        f_block = FactoidBlock.unmarshal(f_raw)
        assert f_block.keymr.hex() == keys["f"] and f_block.marshal() == f_raw
        for pointer in dblock["dblock"]["dbentries"][3:]:
            e_raw = bytes.fromhex(factomd.raw_data(pointer["keymr"])["data"])
            e_block = EntryBlock.unmarshal(e_raw)
            assert e_block.keymr.hex() == pointer["keymr"]
            assert e_block.header.chain_id.hex() == pointer["chainid"]
            listed = factomd.entry_block(pointer["keymr"])["entrylist"]
            hashes = [h for minute in e_block.body.entry_hashes.values() for h in minute]
            assert [h.hex() for h in hashes] == [e["entryhash"] for e in listed]
