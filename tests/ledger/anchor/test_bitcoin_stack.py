"""The bundled stack anchoring in a real Litecoin regtest node (``notary up --anchor-chain
bitcoin-rpc``), with a block mined every second as on a chain with 1-second blocks.

Documents are published through the REST API with callbacks; they reach ``anchor``; the
``anchor`` callback, ``/v1/anchors`` and the node's ``anchors`` name the Litecoin block
and transaction; the exported bundle verifies (``verify_litecoin_bundle``). The time from
each document's directory block to its ``anchor`` stage is printed (``-s`` shows it).
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from rich.console import Console
from typer.testing import CliRunner

from connectors.audit import AuditStore
from flows.cli.application import app as cli_app
from flows.cli.exit_codes import ExitCode
from flows.cli.proof_check import verify_command
from ledger.anchor.export import fetch_bundle
from ledger.core.pow.encoding import from_display_hex
from ledger.core.pow.header import BlockHeader
from ledger.core.proof.policy import policy_named
from ledger.core.proof.steps import Step
from ledger.core.verify_page import render_verify_page
from ledger.jsonrpc.client import JsonRpcClient
from ledger.stack import Stack, StackThread
from tasks.documents import collection_chain, document_entry
from tests.browser.conftest import CHROMIUM_ARGS, chromium_executable, write_page  # noqa: F401
from tests.harness.litecoind import WALLET, BlockTicker, LitecoinNode
from tests.harness.ports import free_port
from tests.harness.servers import HttpServer
from tests.harness.stack import stack_settings
from tests.harness.waiting import wait_until
from tests.ledger.anchor.litecoin import CHAIN, verify_litecoin_bundle
from tests.ledger.anchor.test_e2e import DOCUMENTS, b64

pytestmark = pytest.mark.e2e

CONFIRMATIONS = 2


class Hook:
    """Callback receiver on a free loopback port: the query of every POST, kept."""

    def __init__(self) -> None:
        self.port = free_port()
        self.received: list[dict[str, str]] = []
        lock = threading.Lock()
        received = self.received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
                self.rfile.read(int(self.headers.get("content-length", "0")))
                with lock:
                    received.append(dict(parse_qsl(urlsplit(self.path).query)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = HttpServer(Handler, self.port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


def test_the_stack_anchors_in_litecoin(
    tmp_path: Path,
    litecoin_node: LitecoinNode,
    chromium_executable: str,  # noqa: F811 (the browser tests' fixture, imported above)
) -> None:
    password_file = tmp_path / "litecoin-password"
    password_file.write_text(litecoin_node.password)
    hook = Hook()
    settings = stack_settings(
        tmp_path / "data",
        collector_port=hook.port,  # the one loopback port the API's callbacks may reach
        anchor_confirmations=CONFIRMATIONS,
        anchor_chain="bitcoin-rpc",
        anchor_rpc_url=litecoin_node.url,
        anchor_rpc_user=litecoin_node.user,
        anchor_rpc_password_file=password_file,
        anchor_wallet=WALLET,
        anchor_coin="litecoin",
        anchor_fee_rate=1.0,
    )
    stack = Stack(settings)
    key = stack.prepare()
    thread = StackThread(stack)
    entered_block: dict[str, float] = {}
    anchored_at: dict[str, float] = {}
    with hook.server, BlockTicker(litecoin_node, interval_s=1.0):
        thread.start()
        try:
            api = httpx.Client(base_url=settings.api_url, headers={"user-key": key}, timeout=10)
            chain = collection_chain("litecoin anchors")
            body = {"external_ids": [b64(x) for x in chain.external_ids]}
            assert api.post("/chains", json=body | {"content": b64(chain.content)}).is_success
            published: dict[str, str] = {}
            for name, data in DOCUMENTS.items():
                le = document_entry(
                    chain.chain_id,
                    sha256=hashlib.sha256(data).hexdigest(),
                    size_bytes=len(data),
                    path=name,
                )
                reply = api.post(
                    f"/chains/{chain.chain_id}/entries",
                    json={
                        "external_ids": [b64(x) for x in le.external_ids],
                        "content": b64(le.content),
                        "callback_url": hook.url,
                        "callback_stages": ["anchor"],
                    },
                )
                assert reply.status_code == 202, reply.text
                published[name] = reply.json()["entry_hash"]

            def stages() -> bool:
                for name, entry_hash in published.items():
                    stage = api.get(f"/chains/{chain.chain_id}/entries/{entry_hash}").json()
                    now = time.monotonic()
                    if stage["stage"] in ("ledger", "anchor"):
                        entered_block.setdefault(name, now)
                    if stage["stage"] == "anchor":
                        anchored_at.setdefault(name, now)
                return len(anchored_at) == len(published)

            wait_until(stages, 90, 0.1, what=lambda: f"every entry anchored: {anchored_at}")
            wait_until(lambda: len(hook.received) >= len(published), 30, what="the callbacks")
            node = JsonRpcClient(settings.node_url)
            anchor = JsonRpcClient(settings.anchor_url)
            for name, entry_hash in published.items():
                data = DOCUMENTS[name]
                bundle = fetch_bundle(
                    bytes.fromhex(entry_hash),
                    hashlib.sha256(data).digest(),
                    node=node,
                    anchor=anchor,
                )
                assert bundle.anchor.chain == CHAIN
                steps, verdict = verify_litecoin_bundle(bundle, data, confirmations=CONFIRMATIONS)
                assert steps == list(Step)
                # verdict's date: the anchor block's header time, not the directory block's.
                assert (
                    verdict.anchor_time_s
                    == BlockHeader.unmarshal(bundle.anchor.headers[0]).timestamp
                )
                # `notary verify`: passes under the policy the bundle's chain names (said to be
                # assumed) and fails under the bundled chain's and the mainnets'.
                (tmp_path / name).write_bytes(data)
                (tmp_path / f"{name}.proof.json").write_text(bundle.dumps())
                for policy, expected in (
                    (None, ExitCode.OK),
                    (policy_named("devnet"), ExitCode.INCOMPLETE),
                    (policy_named("litecoin-mainnet"), ExitCode.INCOMPLETE),
                    (policy_named("bitcoin-mainnet"), ExitCode.INCOMPLETE),
                ):
                    out = io.StringIO()
                    code = verify_command(
                        tmp_path / name,
                        tmp_path / f"{name}.proof.json",
                        policy=policy,
                        console=Console(file=out, width=200),
                    )
                    assert code == expected, out.getvalue()
                    assert "litecoin-regtest" in out.getvalue()
                    print(out.getvalue())
                height = node.call("receipt", {"hash": entry_hash})["receipt"][
                    "directoryblockheight"
                ]
                anchors = node.call("anchors", {"height": height})["anchor_pow"]
                block_hash = anchors["blockhash"]
                assert BlockHeader.unmarshal(bundle.anchor.headers[0]).hash() == (
                    from_display_hex(block_hash)
                )
                header = litecoin_node.rpc("getblockheader", block_hash)
                assert header["confirmations"] >= CONFIRMATIONS  # in the best chain
                tx = litecoin_node.rpc("gettransaction", anchors["transactionhash"], wallet=WALLET)
                assert tx["blockhash"] == block_hash
                sdk = {"app_id": "tests", "app_key": key}  # Connect's shapes: /v1/anchors
                reply = httpx.get(f"{settings.api_url}/anchors/{height}", headers=sdk, timeout=10)
                connect = reply.json()["data"]["anchors"]
                assert connect[0]["network"] == "pow"
                assert connect[0]["block_hash"] == block_hash
                assert connect[0]["tx_hash"] == anchors["transactionhash"]
            called = {
                c.get("anchor_block_hash") for c in hook.received if c.get("stage") == "anchor"
            }
            node_blocks = {
                node.call("anchors", {"height": h})["anchor_pow"]["blockhash"]
                for h in {
                    node.call("receipt", {"hash": e})["receipt"]["directoryblockheight"]
                    for e in published.values()
                }
            }
            assert called == node_blocks
            node.close()
            anchor.close()
            api.close()
        finally:
            thread.stop()
    waits = sorted(anchored_at[n] - entered_block[n] for n in published)
    print(f"\ndirectory block to anchor stage, 1-second blocks: {[round(w, 1) for w in waits]} s")
    # The verification page, in Chromium, on the bundles written above: it agrees with
    # `notary verify` under litecoin-regtest (assumed from the chain) and litecoin-mainnet.
    name = next(iter(DOCUMENTS))
    # A browser of this test's own, closed before the test ends: the browser tests'
    # package-wide one would keep Playwright's event loop on this worker's main thread.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            _check_in_the_page(browser.new_page(), tmp_path, name)
        finally:
            browser.close()


def _check_in_the_page(page: Any, tmp_path: Path, name: str) -> None:
    """The page on ``name``'s exported bundle: pass under litecoin-regtest (assumed), fail
    at step 9 under litecoin-mainnet."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(write_page(tmp_path, render_verify_page()))
    page.wait_for_function("() => window.notaryPage !== undefined")
    page.set_input_files("#bundle-input", str(tmp_path / f"{name}.proof.json"))
    page.set_input_files("#document-input", str(tmp_path / name))
    page.wait_for_selector("#result[data-state=done]")
    assert page.get_attribute("#verdict", "data-verdict") == "pass"
    assert page.inner_text("#verdict-text") == (
        "Verified under policy litecoin-regtest: every step holds, but this chain is not"
        " independent evidence."
    )
    assert "the operator's own chain: not independent evidence" in page.inner_text(
        "#verdict-detail"
    )
    page.select_option("#policy-select", "litecoin-mainnet")
    page.wait_for_function("() => document.getElementById('verdict').dataset.verdict === 'fail'")
    assert page.get_attribute("#verdict", "data-failed-step") == "9"
    assert errors == []


def test_up_refuses_an_unreadable_password_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli_app,
        [
            "up",
            "--data-dir",
            str(tmp_path / "data"),
            "--no-prefect",
            "--anchor-chain",
            "bitcoin-rpc",
            "--anchor-rpc-user",
            "notary",
            "--anchor-rpc-password-file",
            str(tmp_path / "missing"),
        ],
    )
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "missing" in result.output


@pytest.mark.usefixtures("prefect_harness")
def test_the_pipeline_notarizes_into_litecoin_anchors(
    tmp_path: Path, litecoin_node: LitecoinNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline's own commands on the stack anchored in Litecoin: ``notary notarize``,
    ``notary collect`` until every document is at ``anchor``, ``notary proof export`` and
    ``notary verify``, all under ``NOTARY_TRUST_POLICY=litecoin-regtest``."""
    password_file = tmp_path / "litecoin-password"
    password_file.write_text(litecoin_node.password)
    settings = stack_settings(
        tmp_path / "data",
        anchor_confirmations=CONFIRMATIONS,
        anchor_chain="bitcoin-rpc",
        anchor_rpc_url=litecoin_node.url,
        anchor_rpc_user=litecoin_node.user,
        anchor_rpc_password_file=password_file,
        anchor_wallet=WALLET,
        anchor_coin="litecoin",
        anchor_fee_rate=1.0,
    )
    stack = Stack(settings)
    stack.prepare()
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, data in DOCUMENTS.items():
        (folder / name).write_bytes(data)
    for name, value in (
        ("NOTARY_API_URL", settings.api_url),
        ("NOTARY_NODE_URL", settings.node_url),
        ("NOTARY_ANCHOR_URL", settings.anchor_url),
        ("NOTARY_TRUST_POLICY", CHAIN),
        ("NOTARY_LEDGER_WAIT_S", "60"),
    ):
        monkeypatch.setenv(name, value)
    data_dir = ["--data-dir", str(settings.data_dir)]
    runner = CliRunner()
    out = tmp_path / "proofs"
    thread = StackThread(stack)
    with BlockTicker(litecoin_node, interval_s=1.0):
        thread.start()
        try:
            notarized = runner.invoke(
                cli_app, ["notarize", str(folder), "--collection", "deeds", *data_dir]
            )
            assert notarized.exit_code == ExitCode.OK, notarized.output

            seen: dict[str, Any] = {}

            def anchored() -> bool:
                collected = runner.invoke(cli_app, ["collect", *data_dir])
                assert collected.exit_code in (ExitCode.OK, ExitCode.INCOMPLETE), collected.output
                with AuditStore(f"sqlite:///{settings.data_dir / 'audit.sqlite'}") as store:
                    seen.update(counts=store.runs.summary("deeds"), output=collected.output)
                counts = seen["counts"]
                return counts["anchor"] > 0 and sum(counts.values()) == counts["anchor"]

            wait_until(
                anchored, 120, interval_s=1.0, what=lambda: f"every document at anchor: {seen}"
            )
            exported = runner.invoke(cli_app, ["proof", "export", "--out", str(out), *data_dir])
            assert exported.exit_code == ExitCode.OK, exported.output
            assert "litecoin-regtest" in exported.output
        finally:
            thread.stop()
    bundles = sorted(out.rglob("*.proof.json"))
    assert len(bundles) == len(DOCUMENTS)
    for bundle in bundles:
        name = next(n for n in DOCUMENTS if bundle.name.startswith(n))
        assert json.loads(bundle.read_text())["anchor"]["chain"] == CHAIN
        (tmp_path / name).write_bytes(DOCUMENTS[name])
        for policy, expected in (("", ExitCode.OK), ("bitcoin-mainnet", ExitCode.INCOMPLETE)):
            args = ["verify", str(tmp_path / name), "--proof", str(bundle)]
            checked = runner.invoke(cli_app, args + (["--policy", policy] if policy else []))
            assert checked.exit_code == expected, checked.output
