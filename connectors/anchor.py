"""Client of the anchoring service's JSON-RPC interface (the bundled proof-of-work chain).

Only what the pipeline needs: the anchor proof of a directory block height (anchor
transaction, its Merkle path in the anchor block, and the headers to the confirmation
depth; see ``docs/proof-bundle.md``).
"""

from __future__ import annotations

from typing import Any

from connectors.errors import RpcError
from connectors.node import NodeClient
from ledger.jsonrpc.codes import ErrorCode

__all__ = ["AnchorClient", "NOT_ANCHORED_CODES"]

#: Codes meaning "not anchored (or not confirmed) yet": the caller waits.
NOT_ANCHORED_CODES = frozenset({ErrorCode.OBJECT_NOT_FOUND})


class AnchorClient(NodeClient):
    """JSON-RPC client of the anchoring service (``http://127.0.0.1:8091/v2`` by default).

    Same transport, errors and batching as ``NodeClient``.
    """

    def anchor_proof(self, height: int, *, depth: int | None = None) -> dict[str, Any] | None:
        """``anchor-proof`` of directory block ``height``, or None while not confirmed.

        Raises:
            RpcError: any error other than "not anchored yet".
        """
        params: dict[str, Any] = {"height": height}
        if depth is not None:
            params["depth"] = depth
        try:
            result = self.call("anchor-proof", params)
        except RpcError as exc:
            if exc.code in NOT_ANCHORED_CODES:
                return None
            raise
        return result if isinstance(result, dict) else None

    def timestamps(self, height: int) -> dict[str, Any] | None:
        """``anchor-timestamps`` of directory block ``height``: its RFC 3161 tokens (DER,
        base64) and the TSAs still waited for; None from a service without the method.

        Raises:
            RpcError: any other error.
        """
        try:
            result = self.call("anchor-timestamps", {"height": height})
        except RpcError as exc:
            if exc.code == ErrorCode.METHOD_NOT_FOUND:
                return None
            raise
        return result if isinstance(result, dict) else None
