"""Fault: the ledger node refuses one accepted write for good.

The publishing API's gateway is the real one (JSON-RPC to the real node and wallet), wrapped
so that the commit of one document's entry reaches the node with one bit of its signature
flipped: the node answers -32602 ``invalid commit signature``, a refusal of the write
itself. The write was answered ``202``; it must not wait silently at ``multi_az``:

1. the API gives it up at once: its read shows stage ``failed`` and the reason;
2. the pipeline asked for ``ledger`` and ``anchor`` callbacks: a signed ``failed``
   callback with the reason reaches ``notary collect``'s receiver;
3. ``notary collect`` marks the notarization ``failed`` with the reason in the audit store
   (the others reach ``ledger``), and ``notary report`` lists it in ``problems.csv`` and
   the HTML;
4. the node holds every other document's entry exactly once, and not the refused one.
"""

from __future__ import annotations

import csv
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectors.audit import AuditStore
from connectors.callback_receiver import CallbackEvent
from flows.audit_report import audit_report
from flows.collect_proofs import collect_proofs, receive_callbacks
from flows.notarize_folder import notarize_folder
from ledger.api.outbox.gateway import (
    ComposedCalls,
    Composition,
    JsonRpcLedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.api.settings import ApiSettings
from tests.harness.waiting import wait_until

from .fault_stack import FaultStack, chain_entry_hashes, collection_chain, make_files

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

FILES = 6


class ForgingGateway:
    """The real gateway, except that the ``nth`` entry composed (chains not counted) gets
    its commit signature's last byte flipped before it goes to the node.

    Attributes:
        forged: entry hashes (hex) whose commit was forged.
    """

    def __init__(self, inner: JsonRpcLedgerGateway, *, nth: int) -> None:
        self.inner, self._nth, self._seen = inner, nth, 0
        self.forged: list[str] = []
        self._lock = threading.Lock()

    def compose(self, items: Sequence[Composition]) -> list[ComposedCalls | RpcFailure]:
        composed = self.inner.compose(items)
        with self._lock:
            return [self._maybe_forge(i, c) for i, c in zip(items, composed, strict=True)]

    def _maybe_forge(
        self, item: Composition, calls: ComposedCalls | RpcFailure
    ) -> ComposedCalls | RpcFailure:
        if item.new_chain or isinstance(calls, RpcFailure):
            return calls
        self._seen += 1
        if self._seen != self._nth:
            return calls
        message = bytearray.fromhex(calls.commit.params["message"])
        message[-1] ^= 1  # the last byte of the ed25519 signature
        self.forged.append(item.entry.hash().hex())
        commit = RpcCall(calls.commit.method, {**calls.commit.params, "message": message.hex()})
        return ComposedCalls(commit, calls.reveal)

    def __getattr__(self, name: str) -> Any:  # submit, height, blocks, anchors, balance
        return getattr(self.inner, name)


def forging_third(made: list[ForgingGateway]) -> Callable[[ApiSettings], ForgingGateway]:
    """The API's gateway factory: a ``ForgingGateway`` forging the third entry, kept in
    ``made`` (to read ``forged``, and close it once the API has stopped)."""

    def forging(settings: ApiSettings) -> ForgingGateway:
        inner = JsonRpcLedgerGateway.from_urls(
            settings.node_url, settings.wallet_url, ec_address=settings.ec_address
        )
        made.append(ForgingGateway(inner, nth=3))
        return made[-1]

    return forging


def test_a_write_the_node_refuses_is_failed_everywhere_the_caller_looks(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    files = make_files(folder, FILES, tag="refused")
    collection = "refused-write"
    gateways: list[ForgingGateway] = []

    with FaultStack(tmp_path / "data", api_gateway=forging_third(gateways)) as fs:
        fs.stack.write_callback_secret()
        settings = fs.pipeline_settings(
            batch_size=10,
            ledger_wait_s=8,
            callback_enabled=True,
            callback_port=fs.stack.settings.collector_port,  # the one the API may call
        )
        events: list[CallbackEvent] = []
        with receive_callbacks(settings, events.append):
            summary = notarize_folder(str(folder), collection, settings, True)
            assert summary["published"] == FILES and summary["publish_failed"] == 0
            (refused,) = gateways[0].forged

            def failed_callback() -> bool:
                return any(e.stage == "failed" and e.entry_hash == refused for e in events)

            wait_until(failed_callback, 30, what="the failed callback")

        # 1. the API's read
        chain = collection_chain(settings, collection)
        chain_id = chain.chain_id
        url = f"{fs.settings.api_url}/chains/{chain_id}/entries/{refused}"
        entry = httpx.get(url, headers={"user-key": fs.api_key}, timeout=10).json()
        assert entry["stage"] == "failed"
        reason = entry["failure"]["reason"]
        assert reason.startswith("refused by the ledger: commit: -32602 Invalid params (")
        assert "signature" in reason and entry["failure"]["attempts"] == 1

        # 2. the callback carried the same reason (signed: the receiver checked it)
        (event,) = [e for e in events if e.stage == "failed"]
        assert event.details["reason"] == reason[:300]

        # 3. collect: the refused one failed with the reason, the others in the ledger
        def collected() -> bool:
            result = collect_proofs(settings, collection)
            stages = result["stages"]
            return stages["failed"] == 1 and stages["ledger"] + stages["anchor"] == FILES - 1

        wait_until(collected, 60, what="collect", interval_s=0.5)
        with AuditStore(settings.audit_url) as store:
            rows = {
                p.notarization.entry_hash: p.notarization
                for p in store.proofs.records(collection=collection)
            }
        assert rows[refused].stage == "failed"
        assert rows[refused].error is not None and reason in rows[refused].error
        assert {r.stage for h, r in rows.items() if h != refused} <= {"ledger", "anchor"}

        report = audit_report(collection, out_dir=str(tmp_path / "report"), settings=settings)
        assert report["failed"] == 1
        with Path(report["files"]["problems"]).open(newline="") as handle:
            problems = [p for p in csv.DictReader(handle) if p["problem"] == "failed"]
        assert len(problems) == 1 and reason in problems[0]["detail"]
        html = Path(report["files"]["html"]).read_text()
        assert "refused by the ledger: commit: -32602 Invalid params" in html

        # 4. the ledger: every other document once, the refused one never
        on_chain = chain_entry_hashes(fs.settings.node_url, chain_id)
        assert len(on_chain) == len(set(on_chain))
        assert refused not in on_chain
        assert set(on_chain) == (set(rows) - {refused}) | {chain.entry_hash}
        assert len(files) == FILES
    for gateway in gateways:  # once the API has stopped using them
        gateway.inner.close()


def test_notarize_stops_waiting_for_a_write_the_api_gave_up(tmp_path: Path) -> None:
    """``notary notarize``'s ledger wait asks the API for given-up writes, as ``collect``
    does: the refused one is failed with the API's reason long before ``ledger_wait_s``."""
    folder = tmp_path / "docs"
    make_files(folder, FILES, tag="given-up")
    gateways: list[ForgingGateway] = []
    wait_s = 300.0
    with FaultStack(tmp_path / "data", api_gateway=forging_third(gateways)) as fs:
        settings = fs.pipeline_settings(ledger_wait_s=wait_s, failed_write_check_s=1.0)
        start = time.monotonic()
        summary = notarize_folder(str(folder), "given-up", settings, True)
        elapsed = time.monotonic() - start
        (refused,) = gateways[0].forged
        with AuditStore(settings.audit_url) as store:
            stages = {p.notarization.entry_hash: p.notarization for p in store.proofs.records()}
    print(f"\nnotarize with a given-up write returned after {elapsed:.1f} s (wait {wait_s} s)")
    assert elapsed < 60, f"waited {elapsed:.1f} s for a write the API gave up"
    assert summary["documents_failed"] == 1 and summary["documents_waiting"] == 0
    assert summary["documents_in_ledger"] == summary["documents_with_receipt"] == FILES - 1
    assert stages[refused].stage == "failed"
    assert stages[refused].error is not None and "gave the write up" in stages[refused].error
    assert any("gave the write up" in message for message in summary["errors"])
    for gateway in gateways:
        gateway.inner.close()
