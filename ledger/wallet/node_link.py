"""The wallet's only question to the ledger node: its block heights (``get-height``)."""

from __future__ import annotations

from typing import Any, Protocol

from ledger.jsonrpc import AsyncJsonRpcClient, JsonRpcCallError, JsonRpcTransportError
from ledger.wallet.errors import NodeUnavailableError

__all__ = ["HeightSource", "NodeHeights"]


class HeightSource(Protocol):
    """Something that knows the ledger's current directory block height."""

    async def height(self) -> int: ...


class NodeHeights:
    """``HeightSource`` asking a node's ``heights`` method over JSON-RPC.

    Args:
        client: an ``AsyncJsonRpcClient`` pointed at ``{node_url}/v2`` (owned by the caller).
    """

    def __init__(self, client: AsyncJsonRpcClient) -> None:
        self._client = client

    async def height(self) -> int:
        """``directoryblockheight`` of the node. NodeUnavailableError on any failure."""
        try:
            result: Any = await self._client.call("heights")
            return int(result["directoryblockheight"])
        except (JsonRpcCallError, JsonRpcTransportError) as exc:
            raise NodeUnavailableError("the ledger node did not answer 'heights'") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise NodeUnavailableError(
                "the ledger node sent an unexpected 'heights' result"
            ) from exc
