"""End to end: a real node and a real wallet on loopback (uvicorn, free ports).

1. Buy entry credits with coins through a named transaction, sent with the composed
   ``coin-submit`` request; the block moves the coins and credits the EC address.
2. Create a chain and entries through ``compose-chain`` / ``compose-entry``.
3. Create an identity chain, replace a key, add and endorse an attribute, and read the
   active keys at two heights.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger import devnet
from ledger.core.addresses import public_key_from_identity
from ledger.core.clock import ManualClock
from ledger.core.entry import Entry
from ledger.core.keys import verify_signature
from ledger.core.transaction import Transaction
from ledger.wallet import WalletSettings, create_app
from tests.harness.servers import AppServer

from .conftest import YELLOW
from .loopback import NODE_START_S, Node, Rpc, running_node

pytestmark = pytest.mark.e2e


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Node, Rpc]]:
    clock = ManualClock(NODE_START_S)
    with running_node(tmp_path / "node", clock) as node:
        settings = WalletSettings(
            wallet_file=tmp_path / "wallet.sqlite",
            node_url=f"{node.served.url}/v2",
            restore_mnemonic=YELLOW,
        )
        with AppServer(create_app(settings, clock=clock)) as served:
            wallet = Rpc(served.url)
            yield node, wallet
            wallet.client.close()


def publish(node: Node, composed: dict[str, Any]) -> str:
    """Send a composed commit then its reveal to the node; returns the entry hash."""
    commit = node.rpc.send(composed["commit"])
    reveal = node.rpc.send(composed["reveal"])
    assert commit["entryhash"] == reveal["entryhash"]
    return str(reveal["entryhash"])


def buy_entry_credits(node: Node, wallet: Rpc, *, ec: str, fa: str, credits: int) -> str:
    rate = node.rpc("entry-credit-rate")["rate"]
    sand = devnet.DEV_FCT_ADDRESS
    wallet("new-transaction", {"tx-name": "buy"})
    wallet("add-input", {"tx-name": "buy", "address": sand, "amount": credits * rate + 10**8})
    wallet("add-output", {"tx-name": "buy", "address": fa, "amount": 10**8})
    built = wallet("add-ec-output", {"tx-name": "buy", "address": ec, "amount": credits * rate})
    assert built["signed"] is False and built["feespaid"] == 0
    assert built["feesrequired"] == rate * (1 + 10 * 2 + 1)  # size < 1 KiB, 2 outputs, 1 input
    funded = wallet("add-fee", {"tx-name": "buy", "address": sand})
    assert funded["feespaid"] == funded["feesrequired"] == built["feesrequired"]
    signed = wallet("sign-transaction", {"tx-name": "buy"})
    assert signed["signed"] is True
    request = wallet("compose-transaction", {"tx-name": "buy"})
    assert list(request) == ["jsonrpc", "id", "params", "method"]
    assert request["method"] == "coin-submit"
    tx = Transaction.unmarshal(bytes.fromhex(request["params"]["transaction"]))
    assert tx.txid().hex() == signed["txid"]
    submitted = node.rpc.send(request)
    assert submitted["txid"] == signed["txid"]
    return str(signed["txid"])


def test_coins_chains_and_identities_through_a_real_node(stack: tuple[Node, Rpc]) -> None:
    node, wallet = stack
    wallet("import-addresses", {"addresses": [{"secret": devnet.DEV_FCT_SECRET}]})
    ec = wallet("generate-ec-address")["public"]
    fa = wallet("generate-factoid-address")["public"]
    sand_before = node.rpc("coin-balance", {"address": devnet.DEV_FCT_ADDRESS})["balance"]

    # 1. entry credits bought with coins
    txid = buy_entry_credits(node, wallet, ec=ec, fa=fa, credits=200)
    assert node.rpc("entry-credit-balance", {"address": ec})["balance"] == 200  # acknowledged
    bought_at = node.next_block()
    assert node.rpc("entry-credit-balance", {"address": ec})["balance"] == 200
    assert node.rpc("coin-balance", {"address": fa})["balance"] == 10**8
    sand_after = node.rpc("coin-balance", {"address": devnet.DEV_FCT_ADDRESS})["balance"]
    assert sand_before - sand_after == 200 * 1000 + 10**8 + 22 * 1000
    history = wallet("transactions", {"txid": txid})["transactions"]
    assert [(t["txid"], t["blockheight"], t["signed"]) for t in history] == [
        (txid, bought_at, True)
    ]
    assert wallet("transactions", {"address": ec})["transactions"] == history
    window = {"range": {"start": bought_at, "end": bought_at}}
    ranged = wallet("transactions", window)["transactions"]
    assert txid in [t["txid"] for t in ranged]
    assert {t["blockheight"] for t in ranged} == {bought_at}
    assert all(
        t["txid"] != txid for t in wallet("transactions", {"start": 0, "end": 0})["transactions"]
    )
    assert wallet.error("transactions", {"range": {"start": 2, "end": 1}})["code"] == -32602
    balances = wallet("wallet-balances")
    assert balances["ecaccountbalances"] == {"ack": 200, "saved": 200}
    assert balances["fctaccountbalances"]["saved"] == sand_after + 10**8

    # 2. a chain and two entries through compose
    first = {"extids": [b"notary".hex(), b"e2e".hex()], "content": b"first".hex()}
    chain = wallet("compose-chain", {"chain": {"firstentry": first}, "ecpub": ec})
    publish(node, chain)
    chain_id = Entry.from_hex(chain["reveal"]["params"]["entry"]).chain_id.hex()
    hashes = []
    for text in (b"second", b"third"):
        entry = {"chainid": chain_id, "extids": [], "content": text.hex()}
        hashes.append(publish(node, wallet("compose-entry", {"entry": entry, "ecpub": ec})))
    node.next_block()
    assert node.rpc("entry", {"hash": hashes[1]})["content"] == b"third".hex()
    assert node.rpc("entry-credit-balance", {"address": ec})["balance"] == 200 - 11 - 1 - 1

    # 3. an identity: created, a key replaced, an attribute endorsed, keys at two heights
    k1, k2, k3 = (wallet("generate-identity-key")["public"] for _ in range(3))
    identity = wallet(
        "compose-identity-chain",
        {"name": ["notary", "e2e-identity"], "pubkeys": [k1, k2], "ecpub": ec},
    )
    publish(node, identity)
    identity_chain = Entry.from_hex(identity["reveal"]["params"]["entry"]).chain_id.hex()
    created_at = node.next_block()

    replacement = {
        "chainid": identity_chain,
        "oldkey": k2,
        "newkey": k3,
        "signerkey": k1,
        "ecpub": ec,
    }
    publish(node, wallet("compose-identity-key-replacement", replacement))
    attribute_hash = publish(
        node,
        wallet(
            "compose-identity-attribute",
            {
                "receiver-chainid": identity_chain,
                "destination-chainid": chain_id,
                "attributes": [{"key": "role", "value": "notary"}],
                "signerkey": k1,
                "signer-chainid": identity_chain,
                "ecpub": ec,
            },
        ),
    )
    endorsement_hash = publish(
        node,
        wallet(
            "compose-identity-attribute-endorsement",
            {
                "destination-chainid": chain_id,
                "entry-hash": attribute_hash,
                "signerkey": k3,
                "signer-chainid": identity_chain,
                "ecpub": ec,
            },
        ),
    )
    replaced_at = node.next_block()
    assert replaced_at == created_at + 1

    endorsement = Entry.from_json(node.rpc("entry", {"hash": endorsement_hash}))
    assert endorsement.content == attribute_hash.encode()
    signed_text = (chain_id + attribute_hash).encode()
    assert verify_signature(public_key_from_identity(k3), signed_text, endorsement.external_ids[1])

    def keys_at(height: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"chainid": identity_chain}
        if height is not None:
            params["height"] = height
        return wallet("active-identity-keys", params)

    assert keys_at(created_at - 1)["keys"] == []
    assert keys_at(created_at) == {
        "chainid": identity_chain,
        "height": created_at,
        "keys": [k1, k2],
    }
    assert keys_at(replaced_at)["keys"] == [k1, k3]
    assert keys_at(None) == {"chainid": identity_chain, "height": replaced_at, "keys": [k1, k3]}
    assert wallet.error("active-identity-keys", {"chainid": "ab" * 32})["code"] == -32009
    assert wallet.error("active-identity-keys", {"chainid": chain_id})["code"] == -32602
