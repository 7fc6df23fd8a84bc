"""The node's JSON-RPC endpoint: the shared one, with batch items run concurrently.

The shared endpoint answers a batch item by item, so a batch of N writes waits for N
group commits one after the other. Here every item of a batch is started at once, in
order: a write handler applies its message to the in-memory state before its first
suspension (the journal write), so a commit still takes effect before a reveal that follows
it in the same batch; the replies then wait together for one group commit. Responses keep
request order (JSON-RPC 2.0 allows any order; keeping it helps simple clients).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import JsonRpcEndpoint, encode_json
from ledger.node.sigcheck import SignatureChecker

__all__ = ["NodeEndpoint"]


class NodeEndpoint(JsonRpcEndpoint):
    """``JsonRpcEndpoint`` whose batches run their items concurrently (see module doc).

    Args:
        registry: the node's methods.
        signatures: when given, the commits of a batch have their signatures checked
            together in its worker thread before the items are dispatched.
        error_http_status, max_body_bytes: as for ``JsonRpcEndpoint``.
    """

    def __init__(
        self,
        registry: MethodRegistry,
        *,
        error_http_status: int = 400,
        max_body_bytes: int = 1_048_576,
        signatures: SignatureChecker | None = None,
    ) -> None:
        super().__init__(
            registry, error_http_status=error_http_status, max_body_bytes=max_body_bytes
        )
        self.signatures = signatures

    async def _handle_batch(self, payload: list[Any]) -> tuple[int, bytes | None]:
        if not payload:
            return await super()._handle_batch(payload)
        checked = await self.signatures.preverify(payload) if self.signatures else []
        try:
            tasks = [asyncio.ensure_future(self.handle_request(item)) for item in payload]
            responses = await asyncio.gather(*tasks)
        finally:
            if self.signatures is not None:
                self.signatures.forget(checked)
        parts = [_encode(r) for r in responses if r is not None]
        if not parts:
            return 204, None
        return 200, b"[" + b",".join(parts) + b"]"


def _encode(response: dict[str, Any]) -> bytes:
    try:
        return encode_json(response)
    except (TypeError, ValueError, RecursionError):
        error = {"code": -32603, "message": "Internal error"}
        return encode_json({"jsonrpc": "2.0", "id": response.get("id"), "error": error})
