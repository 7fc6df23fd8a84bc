"""The bundled stack with HTTPS and RPC credentials on its JSON-RPC services.

A throw-away authority (``trustme``) issues the certificate; every service serves HTTPS
with it, the publishing API included; the stack's own clients trust it (``tls_ca_file``):
the API's worker reaches the wallet and the node over TLS with
the credentials, so a REST write reaches the ``ledger`` stage; the anchoring service
reaches the node and anchors; the pipeline's clients get in with the authority and the
credentials file, and a client that does not trust the authority fails the handshake.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from connectors.anchor import AnchorClient
from connectors.errors import RpcError, ServiceUnavailable
from connectors.node import NodeClient
from flows.settings import PipelineSettings
from ledger.stack import Stack
from tests.harness.stack import running_stack
from tests.harness.tls import issue_certificate
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def tls_stack(tmp_path: Path) -> Iterator[Stack]:
    tls = issue_certificate(tmp_path / "tls")
    with running_stack(
        tmp_path / "data",
        pow_block_time_s=0.5,
        rpc_auth=True,
        tls_cert_file=tls.cert_file,
        tls_key_file=tls.key_file,
        tls_ca_file=tls.ca_file,
    ) as stack:
        yield stack


def test_the_stack_works_over_tls_with_credentials(tls_stack: Stack) -> None:
    s = tls_stack.settings
    assert s.node_url.startswith("https://") and s.api_url.startswith("https://")
    entry = {"external_ids": [base64.b64encode(b"tls stack").decode()], "content": ""}
    key = tls_stack.api_key_file.read_text().strip()
    with httpx.Client(headers={"user-key": key}, timeout=10, verify=str(s.tls_ca_file)) as http:
        created = http.post(f"{s.api_url}/chains", json=entry)
        assert created.status_code == 202
        chain = created.json()["chain_id"]

        def at_ledger() -> bool:
            return http.get(f"{s.api_url}/chains/{chain}").json().get("stage") in (
                "ledger",
                "anchor",
            )

        wait_until(at_ledger, 60, 0.2, what="the chain at stage ledger through TLS")
    settings = PipelineSettings(
        data_dir=s.data_dir,
        node_url=s.node_url,
        anchor_url=s.anchor_url,
        node_tls_ca_file=s.tls_ca_file,
        anchor_tls_ca_file=s.tls_ca_file,
    )
    with NodeClient(s.node_url, access=settings.node_access()) as node:
        height = node.heights()["directoryblockheight"]
    with AnchorClient(s.anchor_url, access=settings.anchor_access()) as anchor:
        wait_until(
            lambda: anchor.call("anchor-status", {"height": height}).get("txid"),
            60,
            0.2,
            what="the anchoring service anchoring through TLS",
            ignoring=(RpcError,),  # -32008 until that block is anchored
        )
    untrusting = PipelineSettings(data_dir=s.data_dir, node_url=s.node_url)
    refused = NodeClient(s.node_url, access=untrusting.node_access())
    with refused, pytest.raises(ServiceUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
        refused.heights()
