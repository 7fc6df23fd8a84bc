"""What the Connect routes read from the ledger node: receipts and anchors.

``LedgerReads`` is the small interface; ``JsonRpcLedgerReads`` asks the node over JSON-RPC
(``receipt`` with the raw entry, ``anchors`` by height or hash). A lookup the node answers
"not found" (-32008) or "not in a block yet" (-32010) is ``None``; an unreachable node or a
reply that is not JSON-RPC raises ``TemporarilyUnavailable`` (HTTP 503).
"""

from __future__ import annotations

from typing import Any, Protocol

from ledger.api.errors import TemporarilyUnavailable
from ledger.jsonrpc.client import JsonRpcClient
from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.credentials import RpcAccess
from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcTransportError

__all__ = ["JsonRpcLedgerReads", "LedgerReads"]

#: Node error codes meaning "no such object (yet)": not found, receipt creation error.
_ABSENT_CODES = frozenset({ErrorCode.OBJECT_NOT_FOUND, ErrorCode.RECEIPT_CREATION_ERROR})


class LedgerReads(Protocol):
    """Reads of public ledger data for the Connect routes."""

    def receipt(self, entry_hash: str) -> dict[str, Any] | None:
        """The node's ``receipt`` object (raw entry included), ``None`` if not in a block."""
        ...

    def anchors(
        self, *, height: int | None = None, key: str | None = None
    ) -> dict[str, Any] | None:
        """The node's ``anchors`` answer for a height or a hash, ``None`` if unknown."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class JsonRpcLedgerReads:
    """``LedgerReads`` over the node's JSON-RPC interface.

    Args:
        node_url: ``{node_url}/v2``.
        timeout_s: per-call timeout, seconds.
        access: credentials and trusted authority of a locked node (docs/jsonrpc.md §1.1).
    """

    def __init__(
        self, node_url: str, *, timeout_s: float = 10.0, access: RpcAccess | None = None
    ) -> None:
        self._node = JsonRpcClient(node_url, timeout_s=timeout_s, access=access)

    def receipt(self, entry_hash: str) -> dict[str, Any] | None:
        reply = self._call("receipt", {"hash": entry_hash, "includerawentry": True})
        return None if reply is None else dict(reply["receipt"])

    def anchors(
        self, *, height: int | None = None, key: str | None = None
    ) -> dict[str, Any] | None:
        params: dict[str, Any] = {"height": height} if key is None else {"hash": key}
        return self._call("anchors", params)

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return self._node.call(method, params)
        except JsonRpcCallError as exc:
            if exc.code in _ABSENT_CODES:
                return None
            raise TemporarilyUnavailable(
                f"the ledger node refused {method}: {exc.message}"
            ) from exc
        except JsonRpcTransportError as exc:
            raise TemporarilyUnavailable("the ledger node cannot be reached now") from exc

    def close(self) -> None:
        self._node.close()
