"""JSON-RPC 2.0 client of the ledger node (docs/jsonrpc.md §4 (Node methods);
docs/formats.md §6, §9).

Built on the project's one JSON-RPC client (``ledger.jsonrpc.client.JsonRpcClient``: one
keep-alive ``httpx.Client``, orjson, the wire rules of ``ledger.jsonrpc.wire``). This module
adds what the pipeline needs on top:

- errors in the connectors' tree (``connectors.errors``): a JSON-RPC error object is an
  ``RpcError``; no JSON-RPC answer is ``ServiceUnavailable`` (unreachable, HTTP 5xx),
  ``AuthError``, ``RequestRejected`` or ``InvalidResponse``;
- batches of at most ``batch_size`` calls (``call_batch``);
- the fallback to single calls for a server that refuses batches: a batch answered with one
  Invalid Request or Parse error object is taken as "no batch support", detected once per
  client, and every later chunk goes one request at a time;
- typed helpers (``receipts``, ``heights``, ``anchors``, ...).

The node may answer errors with HTTP 400 (factomd) or 200; both are read as JSON-RPC
error objects and raised as ``RpcError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx

from connectors.errors import InvalidResponse, RpcError, from_jsonrpc_error
from ledger.core.hexbytes import is_hash_hex
from ledger.jsonrpc.client import JsonRpcClient
from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.credentials import RpcAccess
from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcTransportError
from ledger.jsonrpc.wire import Call, Params

__all__ = [
    "NOT_FOUND_CODES",
    "Call",
    "NodeClient",
]

# Error codes meaning "that object does not exist (yet)" (docs/formats.md §9.2): block/entry not
# found, receipt creation error (entry not yet in a directory block).
NOT_FOUND_CODES = frozenset({ErrorCode.OBJECT_NOT_FOUND, ErrorCode.RECEIPT_CREATION_ERROR})
# A batch refused as a whole with one of these means the server does not take batches.
_BATCH_REFUSED_CODES = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.PARSE_ERROR})


class NodeClient:
    """Client of the node's JSON-RPC interface.

    Args:
        url: the JSON-RPC endpoint, e.g. ``http://127.0.0.1:8088/v2``.
        timeout_s: connect/read/write timeout in seconds.
        batch_size: at most this many calls per JSON-RPC batch request (>= 1).
        transport: an ``httpx`` transport to use instead of the network (tests); by default
            one that retries a failed connect once.
        access: credentials and trusted authority of a locked node (docs/jsonrpc.md §1.1);
            a refusal raises ``AuthError``.

    Raises (every method): ``ServiceUnavailable`` (connect error, timeout, HTTP 5xx
    without a JSON-RPC body), ``AuthError`` (HTTP 401/403), ``RequestRejected`` (other
    HTTP 4xx without a JSON-RPC body), ``InvalidResponse`` (not a JSON-RPC answer),
    ``RpcError`` (a JSON-RPC error object; ``retryable`` tells internal errors apart).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        batch_size: int = 200,
        transport: httpx.BaseTransport | None = None,
        access: RpcAccess | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if transport is None:
            # The transport does the TLS handshake: it carries the trusted authority.
            verify = access.ssl_verify() if access is not None else True
            transport = httpx.HTTPTransport(retries=1, verify=verify)
        self._url = url
        self._batch_size = batch_size
        self._batch_supported = True
        self._rpc = JsonRpcClient(url, timeout_s=timeout_s, transport=transport, access=access)

    def close(self) -> None:
        """Close the pooled connections."""
        self._rpc.close()

    def __enter__(self) -> NodeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- generic calls -------------------------------------------------------------------

    def call(self, method: str, params: Params = None) -> Any:
        """One JSON-RPC call; returns its ``result`` (any JSON value).

        Raises:
            RpcError: the node answered an error object (``code``, ``message``, ``data``).
        """
        with self._converted():
            return self._rpc.call(method, params)

    def call_batch(self, calls: Sequence[Call]) -> list[Any | RpcError]:
        """Many JSON-RPC calls, sent in batches of at most ``batch_size``.

        Args:
            calls: ``(method, params or None)`` pairs.

        Returns:
            per call, in order: its ``result``, or the ``RpcError`` it answered (returned,
            not raised, so one failing call does not hide the others).

        Raises:
            RpcError: the node refused a whole batch with an error other than "no batches".
        """
        results: list[Any | RpcError] = []
        for start in range(0, len(calls), self._batch_size):
            results.extend(self._batch_chunk(calls[start : start + self._batch_size]))
        return results

    # -- typed helpers -------------------------------------------------------------------

    def receipts(
        self, entry_hashes: Sequence[str], *, include_raw_entry: bool = False
    ) -> dict[str, dict[str, Any] | None]:
        """``receipt`` for many entries in batched requests (docs/formats.md §6).

        Args:
            entry_hashes: entry hashes, 64 hex characters each.
            include_raw_entry: ask for ``entry.raw`` (hex of the marshaled entry).

        Returns:
            entry hash (as given) -> the inner ``receipt`` object
            (``entry{entryhash, timestamp[, raw]}``, ``merklebranch[{left,right,top}]``,
            ``entryblockkeymr``, ``directoryblockkeymr``, ``directoryblockheight``), or
            ``None`` when the node has no receipt yet (codes in ``NOT_FOUND_CODES``).

        Raises:
            ValueError: a hash is not 64 hex characters.
            RpcError: any other JSON-RPC error.
        """
        for h in entry_hashes:
            if not is_hash_hex(h):
                raise ValueError(f"not a 64-hex entry hash: {h!r}")
        params: dict[str, Any] = {"includerawentry": True} if include_raw_entry else {}
        calls = [("receipt", {"hash": h, **params}) for h in entry_hashes]
        out: dict[str, dict[str, Any] | None] = {}
        for h, result in zip(entry_hashes, self.call_batch(calls), strict=True):
            out[h] = _receipt_or_none(result, url=self._url)
        return out

    def heights(self) -> dict[str, Any]:
        """``heights``: directoryblockheight, leaderheight, entryblockheight, entryheight."""
        return self._object("heights")

    def dblock_by_height(self, height: int) -> dict[str, Any]:
        """``dblock-by-height``: ``{"dblock": {...header, dbentries, keymr...}, "rawdata": hex}``.

        Raises:
            RpcError: ``ErrorCode.OBJECT_NOT_FOUND`` when no block exists at that height yet.
        """
        return self._object("dblock-by-height", {"height": height})

    def directory_block(self, keymr: str) -> dict[str, Any]:
        """``directory-block``: ``{"header": {prevblockkeymr, sequencenumber, timestamp},
        "entryblocklist": [{chainid, keymr}]}``."""
        return self._object("directory-block", {"keymr": keymr})

    def raw_data(self, hash_hex: str) -> bytes | None:
        """``raw-data``: the exact bytes stored under ``hash_hex`` (an entry, a transaction,
        or a block by its key, e.g. an entry block by its KeyMR), or ``None`` when the node
        has nothing under it (codes in ``NOT_FOUND_CODES``).

        Raises:
            ValueError: ``hash_hex`` is not 64 hex characters.
            InvalidResponse: the result has no hex ``data``.
            RpcError: any other JSON-RPC error.
        """
        if not is_hash_hex(hash_hex):
            raise ValueError(f"not a 64-hex hash: {hash_hex!r}")
        try:
            data = self._object("raw-data", {"hash": hash_hex}).get("data")
        except RpcError as exc:
            if exc.code in NOT_FOUND_CODES:
                return None
            raise
        if isinstance(data, str):
            try:
                return bytes.fromhex(data)
            except ValueError:
                pass
        raise InvalidResponse(f"raw-data: data is not hex: {data!r:.80}", url=self._url)

    def properties(self) -> dict[str, Any]:
        """``properties``: node version and interface version strings."""
        return self._object("properties")

    def anchors(
        self, *, height: int | None = None, hash_hex: str | None = None
    ) -> dict[str, Any] | None:
        """``anchors`` by directory block height or by hash (exactly one); ``None`` if not found.

        Returns:
            ``directoryblockheight``, ``directoryblockkeymr``, ``anchor_pow``,
            ``anchor_contract`` (docs/formats.md §7.1).
        """
        if (height is None) == (hash_hex is None):
            raise ValueError("give exactly one of height or hash_hex")
        params = {"height": height} if height is not None else {"hash": hash_hex}
        try:
            return self._object("anchors", params)
        except RpcError as exc:
            if exc.code in NOT_FOUND_CODES:
                return None
            raise

    # -- plumbing ------------------------------------------------------------------------

    def _object(self, method: str, params: Params = None) -> dict[str, Any]:
        result = self.call(method, params)
        if not isinstance(result, dict):
            raise InvalidResponse(f"{method}: expected an object result", url=self._url)
        return result

    def _batch_chunk(self, chunk: Sequence[Call]) -> list[Any | RpcError]:
        if self._batch_supported and len(chunk) > 1:
            try:
                with self._converted():
                    replies = self._rpc.batch(chunk)
                return [_captured(reply) for reply in replies]
            except RpcError as refused:
                if refused.code not in _BATCH_REFUSED_CODES:
                    raise
                self._batch_supported = False
        return [self._call_captured(method, params) for method, params in chunk]

    def _call_captured(self, method: str, params: Params) -> Any | RpcError:
        try:
            return self.call(method, params)
        except RpcError as exc:
            return exc

    @contextmanager
    def _converted(self) -> Iterator[None]:
        """The JSON-RPC client's errors as ``connectors.errors`` (``from_jsonrpc_error``)."""
        try:
            yield
        except JsonRpcCallError as exc:
            raise from_jsonrpc_error(exc, url=self._url) from exc
        except JsonRpcTransportError as exc:
            # A transport failure is chained to httpx's error, as every connector does.
            raise from_jsonrpc_error(exc, url=self._url) from (exc.__cause__ or exc)


def _captured(reply: Any) -> Any | RpcError:
    """A batch item: its result, or the ``RpcError`` of its error object (not raised)."""
    if isinstance(reply, JsonRpcCallError):
        error = from_jsonrpc_error(reply, url="")
        error.__cause__ = reply
        return error
    return reply


def _receipt_or_none(result: Any, *, url: str) -> dict[str, Any] | None:
    if isinstance(result, RpcError):
        if result.code in NOT_FOUND_CODES:
            return None
        raise result
    receipt = result.get("receipt") if isinstance(result, dict) else None
    if not isinstance(receipt, dict):
        raise InvalidResponse(f"receipt result without a receipt object: {result!r}", url=url)
    return receipt
