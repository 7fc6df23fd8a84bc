"""``BitcoinRpcBackend`` against a real Litecoin Core node in regtest (``tests.harness.litecoind``).

Anchors and windows are sent through the node's wallet, followed to their confirmations,
and proven: the transaction hashes to its txid and carries the payload, its Merkle path
leads to the first header's Merkle root, the headers link and carry Litecoin's scrypt
work. Faults: a locked wallet, an empty one, a fee below what the node's miner takes,
and a node that is down, each named by ``AnchorBackendError.reason`` and by ``check``.
"""

from __future__ import annotations

import pytest

from ledger.anchor.backend import AnchorBackendError, NotConfirmed
from ledger.anchor.bitcoin_rpc import BitcoinRpcBackend, chain_name
from ledger.core.anchor_record import WindowCommitment, encode_anchor_payload
from ledger.core.hashing import sha256
from ledger.core.pow.encoding import from_display_hex, to_display_hex
from ledger.core.pow.header import BlockHeader
from ledger.core.pow.merkle import root_from_path
from ledger.core.pow.tx import PowTransaction
from ledger.jsonrpc.credentials import RpcAccess
from tests.harness.litecoind import WALLET, LitecoinNode
from tests.ledger.anchor.litecoin import CHAIN, scrypt_work_ok

KEYMR = sha256(b"directory block 7")


def backend_for(node: LitecoinNode, **overrides: object) -> BitcoinRpcBackend:
    options: dict[str, object] = {
        "wallet": WALLET,
        "coin": "litecoin",
        "access": RpcAccess.from_parts(node.user, node.password),
        "fee_rate_sat_vb": 1.0,
        "timeout_s": 5.0,
    }
    options.update(overrides)
    return BitcoinRpcBackend(node.url, **options)  # type: ignore[arg-type]


def test_chain_names() -> None:
    assert chain_name("bitcoin", "main") == "bitcoin-mainnet"
    assert chain_name("bitcoin", "test") == "bitcoin-testnet"
    assert chain_name("bitcoin", "signet") == "bitcoin-signet"
    assert chain_name("litecoin", "regtest") == "litecoin-regtest"


def test_an_anchor_is_sent_confirmed_and_proven(litecoin_node: LitecoinNode) -> None:
    backend = backend_for(litecoin_node)
    assert backend.chain == CHAIN
    txid = backend.submit_anchor(7, KEYMR)
    assert backend.submit_anchor(7, KEYMR) == txid  # the same anchor, not sent twice
    assert backend.inclusion(txid) is None  # in the pool, not mined
    assert not backend.lost(txid)
    with pytest.raises(NotConfirmed):
        backend.inclusion_proof(txid, depth=1)

    (block_hash,) = litecoin_node.mine(1)
    inc = backend.inclusion(txid)
    assert inc is not None and inc.confirmations == 1
    assert to_display_hex(inc.block_hash) == block_hash
    assert inc.block_height == litecoin_node.height()
    with pytest.raises(NotConfirmed):
        backend.inclusion_proof(txid, depth=3)

    litecoin_node.mine(2)
    proof = backend.inclusion_proof(txid, depth=3)
    assert proof.chain == CHAIN and proof.block_height == inc.block_height
    tx = PowTransaction.unmarshal(proof.transaction)  # the legacy form: what the txid hashes
    assert tx.txid() == txid
    assert encode_anchor_payload(7, KEYMR) in tx.op_return_payloads()
    headers = [BlockHeader.unmarshal(raw) for raw in proof.headers]
    assert len(headers) == 3
    assert headers[0].hash() == inc.block_hash
    assert root_from_path(txid, proof.tx_index, proof.merkle_path) == headers[0].merkle_root
    assert all(headers[i].prev_hash == headers[i - 1].hash() for i in (1, 2))
    assert all(scrypt_work_ok(raw) for raw in proof.headers)
    node_header = litecoin_node.rpc("getblockheader", block_hash, False)
    assert proof.headers[0].hex() == node_header


def test_a_window_commitment_is_one_transaction(litecoin_node: LitecoinNode) -> None:
    backend = backend_for(litecoin_node)
    window = WindowCommitment(bytes(range(20)), 0, 9, sha256(b"window"))
    txid = backend.submit_window(window)
    (block_hash,) = litecoin_node.mine(1)
    proof = backend.inclusion_proof(txid, depth=1)
    assert window.payload() in PowTransaction.unmarshal(proof.transaction).op_return_payloads()
    decoded = litecoin_node.rpc("getrawtransaction", to_display_hex(txid), True, block_hash)
    assert [o["scriptPubKey"]["type"] for o in decoded["vout"]].count("nulldata") == 1


def test_a_reorganized_anchor_counts_only_in_its_new_block(litecoin_node: LitecoinNode) -> None:
    backend = backend_for(litecoin_node)
    txid = backend.submit_anchor(7, KEYMR)
    (orphan,) = litecoin_node.mine(1)
    assert backend.inclusion(txid) is not None
    litecoin_node.invalidate(orphan)
    assert backend.inclusion(txid) is None  # back in the pool: no longer confirmed
    assert not backend.lost(txid)  # it will be mined again as it is
    litecoin_node.mine(2, address=litecoin_node.new_address())
    inc = backend.inclusion(txid)
    assert inc is not None and to_display_hex(inc.block_hash) != orphan
    proof = backend.inclusion_proof(txid, depth=2)
    assert from_display_hex(orphan) not in [BlockHeader.unmarshal(h).hash() for h in proof.headers]


def test_a_locked_wallet_is_named_and_sends_nothing(litecoin_node: LitecoinNode) -> None:
    backend = backend_for(litecoin_node)
    litecoin_node.rpc("encryptwallet", "correct horse", wallet=WALLET)
    pool = litecoin_node.rpc("getrawmempool")
    with pytest.raises(AnchorBackendError) as raised:
        backend.submit_anchor(7, KEYMR)
    assert raised.value.reason == "wallet-locked"
    assert litecoin_node.rpc("getrawmempool") == pool
    with pytest.raises(AnchorBackendError) as checked:
        backend.check()
    assert checked.value.reason == "wallet-locked"
    litecoin_node.rpc("walletpassphrase", "correct horse", 60, wallet=WALLET)
    assert backend.submit_anchor(7, KEYMR)
    assert "litecoin-regtest at height" in backend.check()


def test_an_empty_wallet_is_named(litecoin_node: LitecoinNode) -> None:
    litecoin_node.rpc("createwallet", "empty")
    backend = backend_for(litecoin_node, wallet="empty")
    with pytest.raises(AnchorBackendError) as raised:
        backend.submit_anchor(7, KEYMR)
    assert raised.value.reason == "wallet-empty"
    with pytest.raises(AnchorBackendError) as checked:
        backend.check()
    assert checked.value.reason == "wallet-empty"


def test_a_fee_the_miner_does_not_take_is_reported(litecoin_node: LitecoinNode) -> None:
    litecoin_node.stop()
    litecoin_node.extra_args = ["-blockmintxfee=0.001"]  # 100 sat/vB: 1 sat/vB waits
    litecoin_node.start()
    backend = backend_for(litecoin_node, stuck_blocks=3)
    txid = backend.submit_anchor(7, KEYMR)
    litecoin_node.mine(2)
    assert backend.inclusion(txid) is None
    assert backend.check()  # two blocks: not stuck yet
    litecoin_node.mine(1)
    with pytest.raises(AnchorBackendError) as checked:
        backend.check()
    assert checked.value.reason == "fee-too-low"
    assert to_display_hex(txid) in str(checked.value)


def test_a_node_that_is_down_is_named(litecoin_node: LitecoinNode) -> None:
    backend = backend_for(litecoin_node)
    litecoin_node.stop()
    with pytest.raises(AnchorBackendError) as raised:
        backend.submit_anchor(7, KEYMR)
    assert raised.value.reason == "node-unreachable"
    assert litecoin_node.password not in str(raised.value)


def test_wrong_credentials_are_named(litecoin_node: LitecoinNode) -> None:
    backend = backend_for(litecoin_node, access=RpcAccess.from_parts("notary", "wrong"))
    with pytest.raises(AnchorBackendError) as raised:
        backend.check()
    assert raised.value.reason == "rpc-refused"
