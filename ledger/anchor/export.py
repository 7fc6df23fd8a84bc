"""Exporting a proof bundle from the running services (node + anchoring service).

Calls: node ``receipt`` (with the raw entry) and ``dblock-by-height`` (raw bytes), then the
anchoring service's ``anchor-proof`` for that directory block height; the parts are
assembled by the pure ``ledger.core.proof.bundle.build_bundle``. The pipeline's own exporter (from
the audit store) makes the same three calls through its connectors.
"""

from __future__ import annotations

from ledger.core.hexbytes import from_hex
from ledger.core.proof.bundle import ProofBundle, build_bundle
from ledger.jsonrpc.client import JsonRpcClient

__all__ = ["fetch_bundle"]


def fetch_bundle(
    entry_hash: bytes,
    document_sha256: bytes,
    *,
    node: JsonRpcClient,
    anchor: JsonRpcClient,
    depth: int | None = None,
) -> ProofBundle:
    """The proof bundle of the entry ``entry_hash`` notarizing ``document_sha256`` (raw bytes).

    Args:
        node: client of the node's ``/v2``; ``anchor``: of the anchoring service's ``/v2``.
        depth: headers to include (default: the service's confirmations).

    Raises:
        JsonRpcCallError: not in a directory block yet (-32010) or not anchored/confirmed
            yet (-32008); JsonRpcTransportError: a service is unreachable.
        DecodeError: the node's raw entry or directory block is not strict hex.
        ProofError: (step 0) the answers do not form a well-shaped bundle.
    """
    receipt = node.call("receipt", {"hash": entry_hash.hex(), "includerawentry": True})["receipt"]
    height = int(receipt["directoryblockheight"])
    dblock = node.call("dblock-by-height", {"height": height})
    params: dict[str, int] = {"height": height}
    if depth is not None:
        params["depth"] = depth
    return build_bundle(
        document_sha256=document_sha256,
        entry=from_hex(receipt["entry"]["raw"], "receipt entry raw"),
        receipt=receipt,
        directory_block=from_hex(dblock["rawdata"], "dblock-by-height rawdata"),
        anchor_proof=anchor.call("anchor-proof", params),
    )
