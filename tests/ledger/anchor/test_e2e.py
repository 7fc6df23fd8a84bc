"""End to end: the bundled network anchors, bundles are exported, and every bundle
verifies offline after every service has stopped (and a forged one does not).

The real stack runs (node, wallet, publishing API, anchoring service) on free loopback
ports with short blocks and a tiny proof-of-work difficulty; documents are published
through the REST API and followed until the API reports the ``anchor`` stage.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from flows.cli.exit_codes import ExitCode
from flows.cli.proof_check import verify_command
from ledger.anchor.export import fetch_bundle
from ledger.core.pow.params import PowParams
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import Step, StepReport
from ledger.core.proof.verify import verify_bundle
from ledger.jsonrpc.client import JsonRpcClient
from ledger.stack import Stack, StackSettings, StackThread
from tasks.documents import collection_chain, document_entry
from tests.harness.ports import free_port
from tests.harness.waiting import wait_until
from tests.ledger.anchor.bundles import policy_of

pytestmark = pytest.mark.e2e

DIFFICULTY_BITS = 8
CONFIRMATIONS = 2
POLICY = policy_of(PowParams(difficulty_bits=DIFFICULTY_BITS, confirmations=CONFIRMATIONS))
DOCUMENTS = {f"doc-{i}.txt": f"document number {i}\n".encode() * (i + 1) for i in range(3)}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def publish(api: httpx.Client) -> dict[str, tuple[str, str]]:
    """Publish the collection chain and one entry per document; ``{name: (chain, entry)}``."""
    chain = collection_chain("anchor e2e")
    body = {"external_ids": [b64(x) for x in chain.external_ids], "content": b64(chain.content)}
    assert api.post("/chains", json=body).status_code == 202
    published = {}
    for name, data in DOCUMENTS.items():
        le = document_entry(
            chain.chain_id, sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data), path=name
        )
        body = {"external_ids": [b64(x) for x in le.external_ids], "content": b64(le.content)}
        reply = api.post(f"/chains/{chain.chain_id}/entries", json=body)
        assert reply.status_code == 202, reply.text
        assert reply.json()["entry_hash"] == le.entry_hash
        published[name] = (chain.chain_id, le.entry_hash)
    return published


def wait_for_anchor_stage(
    api: httpx.Client, published: dict[str, tuple[str, str]], *, timeout_s: float
) -> None:
    stages: dict[str, str] = {}

    def anchored() -> bool:
        for name, (chain_id, entry_hash) in published.items():
            reply = api.get(f"/chains/{chain_id}/entries/{entry_hash}")
            if reply.status_code == 200:
                stages[name] = reply.json()["stage"]
        return len(stages) == len(published) and set(stages.values()) == {"anchor"}

    wait_until(anchored, timeout_s, 0.2, what=lambda: f"every entry anchored: {stages}")


def test_bundles_exported_from_the_network_verify_offline(tmp_path: Path) -> None:
    settings = StackSettings(
        data_dir=tmp_path / "data",
        node_port=free_port(),
        wallet_port=free_port(),
        api_port=free_port(),
        anchor_port=free_port(),
        block_time_s=0.5,
        pow_block_time_s=0.2,
        pow_difficulty_bits=DIFFICULTY_BITS,
        anchor_confirmations=CONFIRMATIONS,
        sqlite_synchronous="NORMAL",
    )
    stack = Stack(settings)
    key = stack.prepare()
    thread = StackThread(stack)
    thread.start()
    bundles: dict[str, Path] = {}
    try:
        with httpx.Client(base_url=settings.api_url, headers={"user-key": key}, timeout=10) as api:
            published = publish(api)
            wait_for_anchor_stage(api, published, timeout_s=60)
        node, anchor = JsonRpcClient(settings.node_url), JsonRpcClient(settings.anchor_url)
        for name, (_chain, entry_hash) in published.items():
            digest = hashlib.sha256(DOCUMENTS[name]).digest()
            bundle = fetch_bundle(bytes.fromhex(entry_hash), digest, node=node, anchor=anchor)
            path = tmp_path / f"{name}.proof.json"
            path.write_text(bundle.dumps())
            bundles[name] = path
        node.close()
        anchor.close()
    finally:
        thread.stop()

    with pytest.raises(httpx.HTTPError):  # every service is down: verification is offline
        httpx.post(
            settings.node_url, json={"jsonrpc": "2.0", "id": 1, "method": "heights"}, timeout=1
        )
    for name, path in bundles.items():
        (tmp_path / name).write_bytes(DOCUMENTS[name])
        reports: list[StepReport] = []
        bundle = ProofBundle.loads(path.read_text())
        verify_bundle(bundle, document_bytes=DOCUMENTS[name], policy=POLICY, on_step=reports.append)
        assert [r.step for r in reports] == list(Step)
        assert [r.step for r in reports if r.skipped] == [Step.COMMITMENT, Step.AGGREGATION]
        out = io.StringIO()
        code = verify_command(
            tmp_path / name, path, policy=POLICY, console=Console(file=out, width=200)
        )
        assert code == ExitCode.OK, out.getvalue()

    name, path = next(iter(bundles.items()))
    forged = json.loads(path.read_text())
    forged["anchor"]["headers"] = forged["anchor"]["headers"][:1]
    path.write_text(json.dumps(forged))
    out = io.StringIO()
    code = verify_command(
        tmp_path / name, path, policy=POLICY, console=Console(file=out, width=200)
    )
    assert code == ExitCode.INCOMPLETE and "step 10" in out.getvalue()
