"""A locked wallet, restarted, reveals no secret through any call until
it is unlocked; its file holds no secret (nor its named transactions) in clear."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger import devnet
from ledger.core.addresses import rcd_hash_from_fct_address, seed_from_fct_secret
from ledger.core.clock import ManualClock
from ledger.wallet import WalletSettings, create_app
from tests.harness.servers import AppServer

from .conftest import FAST_KDF, PASSPHRASE, YELLOW
from .loopback import NODE_START_S, Node, Rpc, running_node

pytestmark = pytest.mark.e2e

ISSUE_METHODS = {
    "active-identity-keys", "add-ec-output", "add-fee", "add-input", "add-output", "address",
    "all-addresses", "all-identity-keys", "compose-chain", "compose-entry",
    "compose-identity-attribute", "compose-identity-attribute-endorsement",
    "compose-identity-chain", "compose-identity-key-replacement", "compose-transaction",
    "delete-transaction", "generate-ec-address", "generate-factoid-address",
    "generate-identity-key", "import-addresses", "import-identity-keys", "import-koinify",
    "remove-address", "remove-identity-key", "identity-key", "new-transaction",
    "sign-transaction", "sub-fee", "tmp-transactions", "transactions", "wallet-backup",
    "wallet-balances", "get-height", "properties", "unlock-wallet", "sign-data",
    "transaction-hash",
}  # fmt: skip
OPEN_WHILE_LOCKED = {"properties", "get-height", "unlock-wallet"}
SAND_FA, SAND_FS = devnet.DEV_FCT_ADDRESS, devnet.DEV_FCT_SECRET
ZERO_ES, ZERO_EC = devnet.DEV_EC_SECRET, devnet.DEV_EC_ADDRESS
IDSEC = "idsec19zBQP2RjHg8Cb8xH2XHzhsB1a6ZkB23cbS21NSyH9pDbzhnN6"
IDPUB = "idpub2Cy86teq57qaxHyqLA8jHwe5JqqCvL1HGH4cKRcwSTbymTTh5n"
CHAIN = "ab" * 32


def params_for(method: str) -> dict[str, Any] | None:
    """Well-formed params for every wallet method (the call must reach the lock check)."""
    tx = {"tx-name": "pending"}
    table: dict[str, dict[str, Any]] = {
        "address": {"address": SAND_FA},
        "remove-address": {"address": ZERO_EC},
        "identity-key": {"public": IDPUB},
        "remove-identity-key": {"public": IDPUB},
        "import-addresses": {"addresses": [{"secret": ZERO_ES}]},
        "import-identity-keys": {"keys": [{"secret": IDSEC}]},
        "import-koinify": {"words": YELLOW},
        "unlock-wallet": {"passphrase": "not-the-passphrase", "timeout": 60},
        "compose-chain": {"chain": {"firstentry": {"extids": [], "content": ""}}, "ecpub": ZERO_EC},
        "compose-entry": {"entry": {"chainid": CHAIN, "extids": [], "content": ""}, "ecpub": ZERO_EC},
        "compose-identity-chain": {"name": ["x"], "pubkeys": [IDPUB], "ecpub": ZERO_EC},
        "compose-identity-key-replacement": {
            "chainid": CHAIN, "oldkey": IDPUB, "newkey": IDPUB, "signerkey": IDPUB,
            "ecpub": ZERO_EC,
        },
        "compose-identity-attribute": {
            "receiver-chainid": CHAIN, "destination-chainid": CHAIN,
            "attributes": [{"key": "k", "value": "v"}], "signerkey": IDPUB,
            "signer-chainid": CHAIN, "ecpub": ZERO_EC,
        },
        "compose-identity-attribute-endorsement": {
            "destination-chainid": CHAIN, "entry-hash": CHAIN, "signerkey": IDPUB,
            "signer-chainid": CHAIN, "ecpub": ZERO_EC,
        },
        "active-identity-keys": {"chainid": CHAIN},
        "sign-data": {"signer": SAND_FA, "data": "aGVsbG8="},
        "add-input": {**tx, "address": SAND_FA, "amount": 1},
        "add-output": {**tx, "address": SAND_FA, "amount": 1},
        "add-ec-output": {**tx, "address": ZERO_EC, "amount": 1},
        "add-fee": {**tx, "address": SAND_FA},
        "sub-fee": {**tx, "address": SAND_FA},
        "sign-transaction": {**tx, "force": True},
        "new-transaction": {"tx-name": "another"},
        "transactions": {"address": SAND_FA},
    }  # fmt: skip
    if method in table:
        return table[method]
    if method in {"delete-transaction", "compose-transaction", "transaction-hash"}:
        return tx
    return None


def wallet_app(tmp_path: Path, node: Node, *, passphrase: str | None) -> Any:
    settings = WalletSettings(
        wallet_file=tmp_path / "wallet.sqlite",
        node_url=f"{node.served.url}/v2",
        encrypted=True,
        passphrase=passphrase,
        restore_mnemonic=YELLOW,
        **FAST_KDF,
    )
    return create_app(settings, clock=node.clock)


def fill_wallet(wallet: Rpc) -> dict[str, Any]:
    """Unlock, import and generate keys, build one named transaction; returns it."""
    wallet("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 600})
    wallet("import-addresses", {"addresses": [{"secret": SAND_FS}, {"secret": ZERO_ES}]})
    wallet("import-identity-keys", {"keys": [{"secret": IDSEC}]})
    wallet("generate-factoid-address")
    wallet("new-transaction", {"tx-name": "pending"})
    wallet("add-input", {"tx-name": "pending", "address": SAND_FA, "amount": 5 * 10**8})
    wallet("add-output", {"tx-name": "pending", "address": SAND_FA, "amount": 5 * 10**8})
    return wallet("add-fee", {"tx-name": "pending", "address": SAND_FA})


def test_a_restarted_locked_wallet_reveals_nothing_until_unlocked(tmp_path: Path) -> None:
    clock = ManualClock(NODE_START_S)
    with running_node(tmp_path / "node", clock) as node:
        with AppServer(wallet_app(tmp_path, node, passphrase=PASSPHRASE)) as served:
            pending = fill_wallet(Rpc(served.url))
            secrets = [a["secret"] for a in Rpc(served.url)("all-addresses")["addresses"]]

        stored = b"".join(p.read_bytes() for p in tmp_path.glob("wallet.sqlite*"))
        for secret in [*secrets, IDSEC]:
            assert secret.encode() not in stored
        assert seed_from_fct_secret(SAND_FS) not in stored
        assert b"yellow" not in stored and PASSPHRASE.encode() not in stored
        assert rcd_hash_from_fct_address(SAND_FA).hex().encode() not in stored  # sealed tx

        app = wallet_app(tmp_path, node, passphrase=None)
        names = app.state.jsonrpc.registry.names()
        assert set(names) >= ISSUE_METHODS
        with AppServer(app) as served:
            wallet = Rpc(served.url)
            replies = {m: wallet.client.batch([(m, params_for(m))])[0] for m in names}
            for method, reply in replies.items():
                if method not in OPEN_WHILE_LOCKED:
                    assert getattr(reply, "code", None) == -32001, (method, reply)
            assert replies["unlock-wallet"].code == -32003
            text = json.dumps({m: str(r) for m, r in replies.items()})
            for secret in [*secrets, IDSEC, YELLOW, "yellow", PASSPHRASE]:
                assert secret not in text

            wallet("unlock-wallet", {"passphrase": PASSPHRASE, "timeout": 60})
            assert wallet("address", {"address": SAND_FA}) == {"public": SAND_FA, "secret": SAND_FS}
            kept = wallet("tmp-transactions")["transactions"]
            assert kept == [pending]
            signed = wallet("sign-transaction", {"tx-name": "pending"})
            submitted = wallet.client.call("transaction-hash", {"tx-name": "pending"})
            assert submitted == {"name": "pending", "txid": signed["txid"]}
            request = wallet("compose-transaction", {"tx-name": "pending"})
            assert node.rpc.send(request)["txid"] == signed["txid"]
            clock.advance(61)  # the unlock timeout passes: locked again
            assert wallet.error("tmp-transactions")["code"] == -32001
