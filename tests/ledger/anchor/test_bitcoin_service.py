"""The anchoring service on a real Litecoin regtest node: records, bundles, reorgs, faults.

The node and the anchoring service run in process (``tests.ledger.anchor.conftest``); the
anchors go to ``litecoind -regtest`` through ``BitcoinRpcBackend``; the test mines the
Litecoin blocks. A bundle is checked with ``verify_litecoin_bundle``.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger import devnet
from ledger.anchor.app import AnchorRuntime
from ledger.anchor.app import create_app as create_anchor_app
from ledger.anchor.backend import AnchorBackendError
from ledger.core.addresses import seed_from_ec_secret
from ledger.core.clock import ManualClock
from ledger.core.keys import SigningKey
from ledger.core.pow.encoding import from_display_hex
from ledger.core.pow.header import BlockHeader
from ledger.core.proof.bundle import ProofBundle, build_bundle
from ledger.core.proof.steps import Step
from ledger.node.app import create_app as create_node_app
from ledger.node.settings import NodeSettings
from tests.harness.litecoind import WALLET, LitecoinNode
from tests.harness.metrics import Samples
from tests.ledger.anchor.conftest import (
    BLOCK_TIME_S,
    CONFIRMATIONS,
    Network,
    RpcFailed,
    anchor_settings,
)
from tests.ledger.anchor.litecoin import CHAIN, verify_litecoin_bundle
from tests.ledger.anchor.test_service import publish_document

pytestmark = pytest.mark.anyio


class LitecoinNetwork(Network):
    """``Network`` whose external chain is the Litecoin node: ``mine`` mines it."""

    litecoin: LitecoinNode

    def mine(self, count: int = 1) -> None:
        self.litecoin.mine(count)


@pytest.fixture
async def net(tmp_path: Path, litecoin_node: LitecoinNode) -> AsyncIterator[LitecoinNetwork]:
    clock = ManualClock(1_700_000_000.0)
    node_app = create_node_app(
        NodeSettings(
            data_dir=tmp_path / "node", block_time_s=BLOCK_TIME_S, sqlite_synchronous="NORMAL"
        ),
        clock=clock,
        produce_blocks=False,
    )
    node_transport = httpx.ASGITransport(app=node_app)
    password_file = tmp_path / "litecoin-rpc-password"
    password_file.write_text(litecoin_node.password + "\n")
    settings = anchor_settings(
        tmp_path,
        backend="bitcoin-rpc",
        btc_rpc_url=litecoin_node.url,
        btc_rpc_user=litecoin_node.user,
        btc_rpc_password_file=password_file,
        btc_wallet=WALLET,
        btc_coin="litecoin",
        btc_fee_rate_sat_vb=1.0,
        btc_timeout_s=5.0,
    )
    anchor_app = create_anchor_app(
        settings, clock=clock, node_transport=node_transport, run_loops=False
    )
    runtime: AnchorRuntime = anchor_app.state.anchor
    anchor_transport = httpx.ASGITransport(app=anchor_app)
    async with (
        httpx.AsyncClient(transport=node_transport, base_url="http://node") as node_client,
        httpx.AsyncClient(transport=anchor_transport, base_url="http://anchor") as anchor_client,
    ):
        network = LitecoinNetwork(
            node_client,
            anchor_client,
            node_app.state.node,
            runtime,
            clock,
            SigningKey.from_seed(seed_from_ec_secret(devnet.DEV_EC_SECRET)),
            node_transport,
        )
        network.litecoin = litecoin_node
        yield network
    await runtime.aclose()
    node_app.state.node.store.close()


async def bundle_of(net: Network, entry_hash: bytes, data: bytes) -> ProofBundle:
    receipt = (await net.call("receipt", {"hash": entry_hash.hex(), "includerawentry": True}))[
        "receipt"
    ]
    height = receipt["directoryblockheight"]
    dblock = await net.call("dblock-by-height", {"height": height})
    return build_bundle(
        document_sha256=hashlib.sha256(data).digest(),
        entry=bytes.fromhex(receipt["entry"]["raw"]),
        receipt=receipt,
        directory_block=bytes.fromhex(dblock["rawdata"]),
        anchor_proof=await net.anchor_call("anchor-proof", {"height": height}),
    )


async def readiness(net: Network) -> dict[str, Any]:
    reply = await net.anchor_client.get("/health/ready")
    checks = {c["name"]: c for c in reply.json()["checks"]}
    return {"status": reply.status_code, **checks}


async def test_a_document_anchored_in_litecoin_verifies(net: LitecoinNetwork) -> None:
    data = b"lease agreement, signed"
    entry = await publish_document(net, data)
    await net.block()
    blocks = net.node.tip.height + 1
    report = await net.anchor_round()
    assert report.submitted == blocks
    net.mine(CONFIRMATIONS)
    report = await net.anchor_round()
    assert (report.recorded, report.windows_recorded) == (blocks, 1)
    await net.block()

    bundle = await bundle_of(net, entry.hash(), data)
    assert bundle.anchor.chain == CHAIN and bundle.contract is not None
    steps, verdict = verify_litecoin_bundle(bundle, data, confirmations=CONFIRMATIONS)
    assert steps == list(Step)
    assert verdict.policy.name == CHAIN and not verdict.policy.independent
    dblock_height = (await net.call("receipt", {"hash": entry.hash().hex()}))["receipt"][
        "directoryblockheight"
    ]
    anchors = await net.call("anchors", {"height": dblock_height})
    status = await net.anchor_call("anchor-status", {"height": dblock_height})
    litecoin_block = net.litecoin.rpc("getblockhash", status["blockheight"])
    assert anchors["anchor_pow"]["blockhash"] == litecoin_block == status["blockhash"]
    assert anchors["anchor_pow"]["transactionhash"] == status["txid"]
    assert BlockHeader.unmarshal(bundle.anchor.headers[0]).hash() == from_display_hex(
        litecoin_block
    )
    assert net.litecoin.rpc("gettransaction", status["txid"], wallet=WALLET)["confirmations"] >= 2
    ready = await readiness(net)
    assert ready["status"] == 200 and ready["chain"]["ok"], ready


async def test_an_orphaned_anchor_is_anchored_again(net: LitecoinNetwork) -> None:
    data = b"board minutes"
    entry = await publish_document(net, data)
    await net.block()
    await net.anchor_round()
    height = (await net.call("receipt", {"hash": entry.hash().hex()}))["receipt"][
        "directoryblockheight"
    ]
    first = await net.anchor_call("anchor-status", {"height": height})
    (orphan,) = net.litecoin.mine(1)
    assert (await net.anchor_call("anchor-status", {"height": height}))["blockhash"] == orphan
    assert (await net.anchor_round()).recorded == 0  # one confirmation of two

    net.litecoin.invalidate(orphan)
    dropped = await net.anchor_call("anchor-status", {"height": height})
    assert dropped["confirmations"] == 0 and dropped["blockhash"] is None
    # The node restarts without its pool and without rebroadcasting: the anchor is gone.
    net.litecoin.stop()
    net.litecoin.extra_args = ["-persistmempool=0", "-walletbroadcast=0"]
    net.litecoin.start()
    await net.anchor_round()
    again = await net.anchor_call("anchor-status", {"height": height})
    assert again["txid"] != first["txid"]
    assert net.litecoin.rpc("gettransaction", first["txid"], wallet=WALLET)["details"][0][
        "abandoned"
    ]

    net.litecoin.mine(CONFIRMATIONS, address=net.litecoin.new_address())
    report = await net.anchor_round()
    assert (report.recorded, report.windows_recorded) == (height + 1, 1)
    await net.block()
    anchors = await net.call("anchors", {"height": height})
    assert anchors["anchor_pow"]["transactionhash"] == again["txid"]
    assert anchors["anchor_pow"]["blockhash"] != orphan
    bundle = await bundle_of(net, entry.hash(), data)
    hashes = [BlockHeader.unmarshal(h).hash() for h in bundle.anchor.headers]
    assert from_display_hex(orphan) not in hashes
    verify_litecoin_bundle(bundle, data, confirmations=CONFIRMATIONS)


async def test_faults_hold_the_anchors_and_say_why(net: LitecoinNetwork) -> None:
    await publish_document(net, b"invoice 12")
    await net.block()
    net.litecoin.stop()
    with pytest.raises(AnchorBackendError) as down:
        await net.anchor_round()
    assert down.value.reason == "node-unreachable"
    assert net.anchor.state.last_height() == -1  # nothing marked as anchored
    ready = await readiness(net)
    assert ready["status"] == 503 and ready["chain"]["detail"].startswith("node-unreachable")
    metrics = Samples.parse((await net.anchor_client.get("/metrics")).text)
    assert "notary_anchor_backend_ok" in metrics.names()
    assert metrics.value("notary_anchor_backend_ok") == 0
    assert metrics.value("notary_anchor_backend_fault", reason="node-unreachable") == 1
    assert net.litecoin.password not in str(ready)

    net.litecoin.start()
    net.litecoin.rpc("encryptwallet", "correct horse", wallet=WALLET)
    with pytest.raises(AnchorBackendError) as locked:
        await net.anchor_round()
    assert locked.value.reason == "wallet-locked"
    assert net.anchor.state.last_height() == -1
    ready = await readiness(net)
    assert ready["chain"]["detail"].startswith("wallet-locked")

    net.litecoin.rpc("walletpassphrase", "correct horse", 600, wallet=WALLET)
    assert (await net.anchor_round()).submitted == net.node.tip.height + 1
    net.mine(CONFIRMATIONS)
    assert (await net.anchor_round()).recorded == net.node.tip.height + 1
    ready = await readiness(net)
    assert ready["status"] == 200, ready
    metrics = Samples.parse((await net.anchor_client.get("/metrics")).text)
    assert metrics.value("notary_anchor_backend_ok") == 1

    net.litecoin.stop()  # the anchors are recorded; asking the chain about one now fails
    with pytest.raises(RpcFailed) as unanswered:
        await net.anchor_call("anchor-status", {"height": 0})
    assert unanswered.value.error["code"] == -32603
    assert unanswered.value.error["data"].startswith("node-unreachable")
