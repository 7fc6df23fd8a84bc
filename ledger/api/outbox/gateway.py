"""The API worker's view of the ledger: a small interface, a JSON-RPC implementation.

``LedgerGateway`` is everything the worker needs from the wallet and the node. Every
method takes a batch and answers one item per request, in order; an item is either the
result or an ``RpcFailure`` (an error object answered by the wallet or node for that item).
An outage (connection refused, timeout, malformed reply) raises ``GatewayUnavailable``
for the whole call; the worker then leaves its rows as they are and tries again later.

Wire calls (docs/jsonrpc.md), each batch sent as JSON-RPC batches of at
most ``max_batch_items`` calls and about ``max_batch_bytes`` bytes, in order:

==========================  ============  ==========================================
gateway method              server        JSON-RPC methods
==========================  ============  ==========================================
``compose``                 wallet        ``compose-chain`` / ``compose-entry``
``submit``                  node          ``commit-*`` / ``reveal-*`` as composed
``height``                  node          ``heights`` -> ``directoryblockheight``
``directory_blocks``        node          ``dblock-by-height``
``entry_blocks``            node          ``entry-block``
``anchors``                 node          ``anchors`` {height}
``ec_balance``              node          ``entry-credit-balance`` {address}
==========================  ============  ==========================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import orjson

from ledger.api.errors import LedgerApiError
from ledger.core.entry import Entry
from ledger.jsonrpc.client import JsonRpcClient
from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.credentials import RpcAccess
from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcError, JsonRpcTransportError
from ledger.jsonrpc.wire import Call

__all__ = [
    "AnchorInfo",
    "ComposedCalls",
    "Composition",
    "DirectoryBlockInfo",
    "GatewayUnavailable",
    "JsonRpcLedgerGateway",
    "LedgerGateway",
    "LedgerRpcClients",
    "RpcBatchClient",
    "RpcCall",
    "RpcFailure",
]

#: Bytes of one request object around its method and params (jsonrpc, id, keys, commas).
_CALL_OVERHEAD_BYTES = 64


class GatewayUnavailable(LedgerApiError):
    """The wallet or node could not be reached or answered something that is not JSON-RPC."""


@dataclass(frozen=True)
class RpcFailure:
    """An error object answered for one request of a batch (not raised).

    Attributes:
        code: JSON-RPC error code (``ErrorCode.REPEATED_COMMIT``, ...).
        message: the error message.
        data: the optional ``error.data``.
    """

    code: int
    message: str
    data: Any = None

    @classmethod
    def of(cls, error: JsonRpcError) -> RpcFailure:
        """The failure carrying ``error``'s code, message and data."""
        return cls(error.code, error.message, error.data)

    def describe(self) -> str:
        """One-line text for logs and the ``last_error`` column."""
        detail = f" ({self.data})" if self.data is not None else ""
        return f"{self.code} {self.message}{detail}"


@dataclass(frozen=True)
class RpcCall:
    """A node call as composed by the wallet: ``method`` and its ``params`` object."""

    method: str
    params: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RpcCall:
        return cls(str(data["method"]), dict(data.get("params") or {}))


@dataclass(frozen=True)
class Composition:
    """One thing to compose: a new chain (``entry`` is its first entry) or an entry."""

    entry: Entry
    new_chain: bool


@dataclass(frozen=True)
class ComposedCalls:
    """The commit and reveal calls the wallet composed for one ``Composition``."""

    commit: RpcCall
    reveal: RpcCall


@dataclass(frozen=True)
class DirectoryBlockInfo:
    """What the worker needs of a directory block.

    Attributes:
        height: directory block height.
        keymr: key Merkle root, 64 hex characters.
        entry_blocks: ``(chain_id_hex, entry_block_keymr_hex)`` for every entry block listed.
    """

    height: int
    keymr: str
    entry_blocks: tuple[tuple[str, str], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class AnchorInfo:
    """Anchor of one directory block in the external proof-of-work chain.

    Attributes:
        height: the directory block height anchored.
        block_hash: hash of the external block that holds the anchor (hex).
    """

    height: int
    block_hash: str


class RpcBatchClient(Protocol):
    """What the gateway needs of a JSON-RPC client: ``JsonRpcClient`` (HTTP) or
    ``ledger.jsonrpc.local.LocalJsonRpcClient`` (an endpoint served in this process)."""

    @property
    def url(self) -> str:
        """The endpoint, for error messages."""
        ...

    def batch(self, calls: Sequence[Call]) -> list[Any]:
        """One item per call (result or ``JsonRpcCallError``); raises ``JsonRpcCallError``
        for a batch refused whole, ``JsonRpcTransportError`` for no answer."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


@dataclass(frozen=True)
class LedgerRpcClients:
    """The node's and the wallet's clients a ``JsonRpcLedgerGateway`` is built on, given to
    the API in place of its ``node_url`` / ``wallet_url`` (the bundled stack's in-process
    clients)."""

    node: RpcBatchClient
    wallet: RpcBatchClient


class LedgerGateway(Protocol):
    """What the worker needs from the wallet and the node; every call is one batch."""

    def compose(self, items: Sequence[Composition]) -> list[ComposedCalls | RpcFailure]:
        """Compose commit + reveal for each item (wallet ``compose-chain``/``compose-entry``)."""
        ...

    def submit(self, calls: Sequence[RpcCall]) -> list[dict[str, Any] | RpcFailure]:
        """Send composed commit or reveal calls to the node, in order."""
        ...

    def height(self) -> int:
        """Height of the newest complete directory block (``heights.directoryblockheight``)."""
        ...

    def directory_blocks(self, heights: Sequence[int]) -> list[DirectoryBlockInfo | RpcFailure]:
        """Directory blocks by height (``dblock-by-height``)."""
        ...

    def entry_blocks(self, keymrs: Sequence[str]) -> list[list[str] | RpcFailure]:
        """Entry hashes (hex, in block order) of each entry block (``entry-block``)."""
        ...

    def anchors(self, heights: Sequence[int]) -> list[AnchorInfo | None]:
        """Proof-of-work anchor of each directory block height, ``None`` while not anchored."""
        ...

    def ec_balance(self) -> int:
        """Acknowledged balance of the paying entry credit address, credits
        (``entry-credit-balance``, docs/jsonrpc.md §4.2)."""
        ...

    def entry_statuses(self, entries: Sequence[tuple[str, str]]) -> list[str | RpcFailure]:
        """Status on the node of each ``(chain id hex, entry hash hex)``: ``ack``'s
        ``entrydata.status`` (docs/jsonrpc.md §3: ``DBlockConfirmed`` in a saved block,
        ``TransactionACK`` revealed and acknowledged, ``NotConfirmed`` a reveal held for
        its commit, ``Unknown``)."""
        ...


class JsonRpcLedgerGateway:
    """``LedgerGateway`` over the JSON-RPC interfaces of the wallet and the node.

    Args:
        node: client of ``{node_url}`` (``/v2``), or of the node served in this process.
        wallet: client of ``{wallet_url}`` (``/v2``), or of the wallet served in this process.
        ec_address: public entry credit address (``EC...``) whose key the wallet holds.
        max_batch_bytes: largest JSON-RPC batch body sent in one HTTP request (estimated
            from the parameters), bytes; a longer list of calls goes as several batches,
            in order. The default stays under the node's default 1 MiB body limit even
            with reveals of the largest entries (about 20 KiB each in hex). None: no
            limit (in-process clients send no body; the estimate is not computed).
        max_batch_items: most calls in one request.
    """

    def __init__(
        self,
        node: RpcBatchClient,
        wallet: RpcBatchClient,
        *,
        ec_address: str,
        max_batch_bytes: int | None = 768 * 1024,
        max_batch_items: int = 1000,
    ) -> None:
        self._node = node
        self._wallet = wallet
        self._ec_address = ec_address
        self._max_bytes, self._max_items = max_batch_bytes, max_batch_items

    @classmethod
    def from_urls(
        cls,
        node_url: str,
        wallet_url: str,
        *,
        ec_address: str,
        timeout_s: float = 30.0,
        node_access: RpcAccess | None = None,
        wallet_access: RpcAccess | None = None,
    ) -> JsonRpcLedgerGateway:
        """Build the two clients from their URLs and what reaches each when it is locked
        (credentials, trusted authority: docs/jsonrpc.md §1.1)."""
        return cls(
            JsonRpcClient(node_url, timeout_s=timeout_s, access=node_access),
            JsonRpcClient(wallet_url, timeout_s=timeout_s, access=wallet_access),
            ec_address=ec_address,
        )

    def close(self) -> None:
        """Close both clients' connections."""
        self._node.close()
        self._wallet.close()

    def compose(self, items: Sequence[Composition]) -> list[ComposedCalls | RpcFailure]:
        calls = [self._compose_call(item) for item in items]
        return [_map(r, _composed) for r in self._batch(self._wallet, calls)]

    def submit(self, calls: Sequence[RpcCall]) -> list[dict[str, Any] | RpcFailure]:
        replies = self._batch(self._node, [(c.method, c.params) for c in calls])
        return [_map(r, lambda value: value if isinstance(value, dict) else {}) for r in replies]

    def height(self) -> int:
        (reply,) = self._batch(self._node, [("heights", None)])
        if isinstance(reply, JsonRpcCallError):
            raise GatewayUnavailable(f"heights failed: {reply.code} {reply.message}")
        return _int_field(reply, "directoryblockheight")

    def directory_blocks(self, heights: Sequence[int]) -> list[DirectoryBlockInfo | RpcFailure]:
        replies = self._batch(self._node, [("dblock-by-height", {"height": h}) for h in heights])
        return [_map(r, partial(_dblock, height=h)) for h, r in zip(heights, replies, strict=True)]

    def entry_blocks(self, keymrs: Sequence[str]) -> list[list[str] | RpcFailure]:
        replies = self._batch(self._node, [("entry-block", {"keymr": k}) for k in keymrs])
        return [_map(r, _entry_hashes) for r in replies]

    def anchors(self, heights: Sequence[int]) -> list[AnchorInfo | None]:
        replies = self._batch(self._node, [("anchors", {"height": h}) for h in heights])
        return [_anchor(h, r) for h, r in zip(heights, replies, strict=True)]

    def ec_balance(self) -> int:
        """Raises ``GatewayUnavailable`` when the node cannot be asked or refuses the address."""
        (reply,) = self._batch(
            self._node, [("entry-credit-balance", {"address": self._ec_address})]
        )
        if isinstance(reply, JsonRpcCallError):
            raise GatewayUnavailable(f"entry-credit-balance failed: {reply.code} {reply.message}")
        return _int_field(reply, "balance")

    def entry_statuses(self, entries: Sequence[tuple[str, str]]) -> list[str | RpcFailure]:
        calls = [("ack", {"hash": h, "chainid": c}) for c, h in entries]
        return [_map(r, _entry_status) for r in self._batch(self._node, calls)]

    def _batch(self, client: RpcBatchClient, calls: list[tuple[str, Any]]) -> list[Any]:
        """``client.batch`` in chunks of at most ``max_batch_items`` / ``max_batch_bytes``."""
        replies: list[Any] = []
        for chunk in _split(calls, max_items=self._max_items, max_bytes=self._max_bytes):
            replies.extend(_batch(client, chunk))
        return replies

    def _compose_call(self, item: Composition) -> tuple[str, dict[str, Any]]:
        hex_ids = [x.hex() for x in item.entry.external_ids]
        content = item.entry.content.hex()
        if item.new_chain:
            chain = {"firstentry": {"extids": hex_ids, "content": content}}
            return "compose-chain", {"chain": chain, "ecpub": self._ec_address}
        entry = {"chainid": item.entry.chain_id.hex(), "extids": hex_ids, "content": content}
        return "compose-entry", {"entry": entry, "ecpub": self._ec_address}


def _split(
    calls: list[tuple[str, Any]], *, max_items: int, max_bytes: int | None
) -> list[list[tuple[str, Any]]]:
    """Consecutive chunks of ``calls`` within both limits (a single oversized call alone;
    ``max_bytes`` None: by count only)."""
    if max_bytes is None:
        return [calls[i : i + max_items] for i in range(0, len(calls), max_items)]
    chunks: list[list[tuple[str, Any]]] = []
    current: list[tuple[str, Any]] = []
    size = 0
    for call in calls:
        cost = len(orjson.dumps(call[1])) + len(call[0]) + _CALL_OVERHEAD_BYTES
        if current and (len(current) >= max_items or size + cost > max_bytes):
            chunks.append(current)
            current, size = [], 0
        current.append(call)
        size += cost
    if current:
        chunks.append(current)
    return chunks


def _batch(client: RpcBatchClient, calls: list[tuple[str, Any]]) -> list[Any]:
    """``client.batch`` with outages (and whole-batch refusals) as GatewayUnavailable."""
    if not calls:
        return []
    try:
        return client.batch(calls)
    except (JsonRpcTransportError, JsonRpcCallError) as exc:
        raise GatewayUnavailable(f"{client.url}: {exc}") from exc


def _map(reply: Any, convert: Any) -> Any:
    """RpcFailure for an error item, else ``convert(result)`` (a malformed result -> failure)."""
    if isinstance(reply, JsonRpcCallError):
        return RpcFailure.of(reply)
    try:
        return convert(reply)
    except (KeyError, TypeError, ValueError) as exc:
        return RpcFailure(
            ErrorCode.INTERNAL_ERROR, "malformed result", f"{type(exc).__name__}: {exc}"
        )


def _entry_status(result: dict[str, Any]) -> str:
    return str(result["entrydata"]["status"])


def _composed(result: dict[str, Any]) -> ComposedCalls:
    return ComposedCalls(RpcCall.from_json(result["commit"]), RpcCall.from_json(result["reveal"]))


def _dblock(result: dict[str, Any], *, height: int) -> DirectoryBlockInfo:
    dblock = result["dblock"]
    pairs = tuple((str(e["chainid"]), str(e["keymr"])) for e in dblock.get("dbentries") or [])
    return DirectoryBlockInfo(height, str(dblock["keymr"]), pairs)


def _entry_hashes(result: dict[str, Any]) -> list[str]:
    return [str(item["entryhash"]) for item in result.get("entrylist") or []]


def _anchor(height: int, reply: Any) -> AnchorInfo | None:
    if isinstance(reply, JsonRpcCallError) or not isinstance(reply, dict):
        return None
    pow_anchor = reply.get("anchor_pow")
    if not isinstance(pow_anchor, dict) or not pow_anchor.get("blockhash"):
        return None
    return AnchorInfo(height, str(pow_anchor["blockhash"]))


def _int_field(result: Any, name: str) -> int:
    if not isinstance(result, dict) or not isinstance(result.get(name), int):
        raise GatewayUnavailable(f"reply without integer {name!r}: {result!r}")
    return int(result[name])
