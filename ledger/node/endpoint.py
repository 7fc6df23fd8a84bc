"""The node's JSON-RPC endpoint: the shared one, with batch items run concurrently.

The shared endpoint answers a batch item by item by default, so a batch of N writes would
wait for N group commits one after the other. The node turns on the endpoint's
``concurrent_batches`` option: every item of a batch is started at once, in order; a write
handler applies its message to the in-memory state before its first suspension (the
journal write), so a commit still takes effect before a reveal that follows it in the same
batch, and the replies then wait together for one group commit. Responses keep request
order. Around each batch, the commits' signatures are checked together in the signature
checker's worker thread (the endpoint's ``batch_scope``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import BatchScope, JsonRpcEndpoint
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
            registry,
            error_http_status=error_http_status,
            max_body_bytes=max_body_bytes,
            concurrent_batches=True,
            batch_scope=None if signatures is None else _preverified(signatures),
        )
        self.signatures = signatures


def _preverified(signatures: SignatureChecker) -> BatchScope:
    """A batch scope: pre-check the batch's commit signatures, drop unused results after."""

    @asynccontextmanager
    async def scope(items: list[Any]) -> AsyncIterator[None]:
        checked = await signatures.preverify(items)
        try:
            yield
        finally:
            signatures.forget(checked)

    return scope
