"""JsonRpcLedgerGateway over in-process clients (the bundled stack's) answers as over HTTP.

A real node and a real wallet, each served by uvicorn in a thread of its own; one gateway
calls them over loopback JSON-RPC, the other hands the same calls to their endpoints on
their event loops (``LocalJsonRpcClient``). The wallet's clock is manual, so that both
compose the same commits; every answer, good or bad, must be the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from ledger import devnet
from ledger.api.outbox.gateway import (
    ComposedCalls,
    Composition,
    GatewayUnavailable,
    JsonRpcLedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.core.addresses import ec_public_address
from ledger.core.clock import ManualClock
from ledger.core.entry import Entry
from ledger.jsonrpc import ErrorCode
from ledger.jsonrpc.local import LocalJsonRpcClient
from ledger.node.app import create_app as create_node_app
from ledger.node.settings import NodeSettings
from ledger.wallet.app import create_app as create_wallet_app
from ledger.wallet.settings import WalletSettings
from tests.harness.servers import AppServer

BLOCK_TIME_S = 10.0
#: A well-formed EC address whose key the wallet does not hold.
STRANGER_EC = ec_public_address(bytes(range(32)))


@dataclass
class Ledger:
    node: AppServer
    node_service: Any
    wallet: AppServer
    clock: ManualClock
    clients: tuple[LocalJsonRpcClient, LocalJsonRpcClient]

    def gateways(self, ec_address: str = devnet.DEV_EC_ADDRESS) -> dict[str, JsonRpcLedgerGateway]:
        """The same ledger through HTTP and in process."""
        http = JsonRpcLedgerGateway.from_urls(
            f"{self.node.url}/v2", f"{self.wallet.url}/v2", ec_address=ec_address
        )
        local = JsonRpcLedgerGateway(*self.clients, ec_address=ec_address, max_batch_bytes=None)
        return {"http": http, "local": local}

    def next_block(self) -> None:
        for _ in range(10):
            self.clock.advance(BLOCK_TIME_S / 10)
            self.node.run(self.node_service.tick())


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    clock = ManualClock(1_700_000_000.0)
    node_settings = NodeSettings(
        data_dir=tmp_path / "node", block_time_s=BLOCK_TIME_S, sqlite_synchronous="NORMAL"
    )
    node_app = create_node_app(node_settings, clock=clock, produce_blocks=False)
    with AppServer(node_app, name="node") as node:
        wallet_settings = WalletSettings(
            data_dir=tmp_path / "wallet",
            node_url=f"{node.url}/v2",
            import_secrets=[SecretStr(devnet.DEV_EC_SECRET)],
        )
        wallet_app = create_wallet_app(wallet_settings, clock=clock)
        with AppServer(wallet_app, name="wallet") as wallet:
            clients = (
                LocalJsonRpcClient(
                    node_app.state.jsonrpc,
                    node.loop,
                    url="in-process:node",
                    serving=lambda: node.serving,
                ),
                LocalJsonRpcClient(
                    wallet_app.state.jsonrpc,
                    wallet.loop,
                    url="in-process:wallet",
                    serving=lambda: wallet.serving,
                ),
            )
            yield Ledger(node, node_app.state.node, wallet, clock, clients)


def items() -> list[Composition]:
    first = Entry.first_entry([b"gateway", b"local"], b"first")
    later = Entry(first.chain_id, (b"doc-1",), b"\x00" * 40)
    return [Composition(first, True), Composition(later, False)]


def test_compose_answers_alike_for_held_and_unknown_keys(ledger: Ledger) -> None:
    answers = {name: g.compose(items()) for name, g in ledger.gateways().items()}
    assert answers["local"] == answers["http"]
    assert all(isinstance(c, ComposedCalls) for c in answers["local"])
    refused = {name: g.compose(items()) for name, g in ledger.gateways(STRANGER_EC).items()}
    assert refused["local"] == refused["http"]
    assert all(isinstance(c, RpcFailure) for c in refused["local"])


def test_submit_answers_alike_for_accepted_repeated_and_malformed_calls(ledger: Ledger) -> None:
    gateways = ledger.gateways()
    chain, entry = gateways["local"].compose(items())
    assert isinstance(chain, ComposedCalls) and isinstance(entry, ComposedCalls)
    (accepted,) = gateways["local"].submit([chain.commit])
    assert isinstance(accepted, dict) and accepted["message"] == "Chain Commit Success"
    repeated = {name: g.submit([chain.commit]) for name, g in gateways.items()}
    assert repeated["local"] == repeated["http"]
    (failure,) = repeated["local"]
    assert isinstance(failure, RpcFailure) and failure.code == ErrorCode.REPEATED_COMMIT
    bad = [
        RpcCall("commit-entry", {"message": "zz"}),
        RpcCall("commit-entry", {}),
        RpcCall("reveal-entry", {"entry": "00"}),
        RpcCall("no-such-method", {}),
    ]
    malformed = {name: g.submit(bad) for name, g in gateways.items()}
    assert malformed["local"] == malformed["http"]
    assert [f.code for f in malformed["local"] if isinstance(f, RpcFailure)] == [
        ErrorCode.INVALID_PARAMS,
        ErrorCode.INVALID_PARAMS,
        ErrorCode.INVALID_PARAMS,
        ErrorCode.METHOD_NOT_FOUND,
    ]
    (revealed,) = gateways["local"].submit([chain.reveal])
    assert isinstance(revealed, dict) and revealed["message"] == "Entry Reveal Success"
    again = {name: g.submit([chain.reveal, entry.commit]) for name, g in gateways.items()}
    assert again["local"][0] == again["http"][0]


def test_reads_answer_alike(ledger: Ledger) -> None:
    gateways = ledger.gateways()
    chain, _ = gateways["local"].compose(items())
    assert isinstance(chain, ComposedCalls)
    gateways["local"].submit([chain.commit, chain.reveal])
    ledger.next_block()
    height = gateways["local"].height()
    assert height == gateways["http"].height() >= 1
    (block,) = gateways["local"].directory_blocks([height])
    assert not isinstance(block, RpcFailure)
    keymrs = [keymr for _, keymr in block.entry_blocks] + ["00" * 32, "zz"]
    first = items()[0].entry
    statuses = [(first.chain_id.hex(), first.hash().hex()), (first.chain_id.hex(), "11" * 32)]
    for read in (
        lambda g: g.height(),
        lambda g: g.directory_blocks([0, height, height + 5]),
        lambda g: g.entry_blocks(keymrs),
        lambda g: g.anchors([height]),
        lambda g: g.ec_balance(),
        lambda g: g.entry_statuses(statuses),
    ):
        assert read(gateways["local"]) == read(gateways["http"])
    assert gateways["local"].entry_statuses(statuses)[0] == "DBlockConfirmed"


def test_a_stopped_node_is_an_outage_of_the_whole_call(ledger: Ledger) -> None:
    gateways = ledger.gateways()
    assert gateways["local"].height() == gateways["http"].height()
    ledger.node.stop()
    for gateway in gateways.values():
        with pytest.raises(GatewayUnavailable):
            gateway.height()
        with pytest.raises(GatewayUnavailable):
            gateway.submit([RpcCall("commit-entry", {"message": "00"})])
