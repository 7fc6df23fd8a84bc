"""JSON-RPC 2.0 client of the ledger node (spec ``node-wallet-jsonrpc.md``; formats 6, 9).

Calls go as HTTP POST to ``{node_url}/v2`` over one keep-alive ``httpx.Client``. Many calls
can go in one JSON-RPC batch (``call_batch``); a server that rejects batches (answers a
single ``Invalid Request``/``Parse error`` object) is detected once and then called one
request at a time. The node may answer errors with HTTP 400 (factomd) or 200; both are
read as JSON-RPC error objects and raised as ``RpcError``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
import orjson

from connectors.errors import (
    AuthError,
    InvalidResponse,
    RequestRejected,
    RpcError,
    ServiceUnavailable,
    from_transport_error,
)

__all__ = [
    "NOT_FOUND_CODES",
    "Call",
    "NodeClient",
]

# Error codes meaning "that object does not exist (yet)" (formats 9.2): block/entry not
# found, receipt creation error (entry not yet in a directory block).
NOT_FOUND_CODES = frozenset({-32008, -32010})
_BATCH_REJECTED_CODES = frozenset({-32600, -32700})
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")

Call = tuple[str, Mapping[str, Any] | None]


class NodeClient:
    """Client of the node's JSON-RPC interface.

    Args:
        url: the JSON-RPC endpoint, e.g. ``http://127.0.0.1:8088/v2``.
        timeout_s: connect/read/write timeout in seconds.
        batch_size: at most this many calls per JSON-RPC batch request (>= 1).
        transport: an ``httpx`` transport to use instead of the network (tests).

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
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if transport is None:
            transport = httpx.HTTPTransport(retries=1)
        self._url = url
        self._batch_size = batch_size
        self._batch_supported = True
        self._ids = itertools.count(1)
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, pool=None),
            transport=transport,
            headers={"content-type": "application/json", "accept": "application/json"},
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self._client.close()

    def __enter__(self) -> NodeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- generic calls -------------------------------------------------------------------

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """One JSON-RPC call; returns its ``result`` (any JSON value).

        Raises:
            RpcError: the node answered an error object (``code``, ``message``, ``data``).
        """
        request_id = next(self._ids)
        answer = self._post(_request(request_id, method, params))
        if not isinstance(answer, dict):
            raise InvalidResponse(f"{method}: expected a JSON-RPC object", url=self._url)
        return _result_of(answer, method, url=self._url)

    def call_batch(self, calls: Sequence[Call]) -> list[Any | RpcError]:
        """Many JSON-RPC calls, sent in batches of at most ``batch_size``.

        Args:
            calls: ``(method, params or None)`` pairs.

        Returns:
            per call, in order: its ``result``, or the ``RpcError`` it answered (returned,
            not raised, so one failing call does not hide the others).
        """
        results: list[Any | RpcError] = []
        for chunk in _chunks(calls, self._batch_size):
            results.extend(self._batch_chunk(chunk))
        return results

    # -- typed helpers -------------------------------------------------------------------

    def receipts(
        self, entry_hashes: Sequence[str], *, include_raw_entry: bool = False
    ) -> dict[str, dict[str, Any] | None]:
        """``receipt`` for many entries in batched requests (formats section 6).

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
            if not _HEX64.fullmatch(h):
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
            RpcError: code -32008 when no block exists at that height yet.
        """
        return self._object("dblock-by-height", {"height": height})

    def directory_block(self, keymr: str) -> dict[str, Any]:
        """``directory-block``: ``{"header": {prevblockkeymr, sequencenumber, timestamp},
        "entryblocklist": [{chainid, keymr}]}``."""
        return self._object("directory-block", {"keymr": keymr})

    def properties(self) -> dict[str, Any]:
        """``properties``: node version and interface version strings."""
        return self._object("properties")

    def anchors(
        self, *, height: int | None = None, hash_hex: str | None = None
    ) -> dict[str, Any] | None:
        """``anchors`` by directory block height or by hash (exactly one); ``None`` if not found.

        Returns:
            ``directoryblockheight``, ``directoryblockkeymr``, ``anchor_pow``,
            ``anchor_contract`` (formats 7.1).
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

    def _object(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(method, params)
        if not isinstance(result, dict):
            raise InvalidResponse(f"{method}: expected an object result", url=self._url)
        return result

    def _batch_chunk(self, chunk: Sequence[Call]) -> list[Any | RpcError]:
        if self._batch_supported and len(chunk) > 1:
            ids = [next(self._ids) for _ in chunk]
            payload = [_request(i, m, p) for i, (m, p) in zip(ids, chunk, strict=True)]
            answer = self._post(payload)
            if isinstance(answer, list):
                return _match_batch(answer, ids, chunk, url=self._url)
            if not _is_batch_rejection(answer):
                raise InvalidResponse("batch answered with a non-list", url=self._url)
            self._batch_supported = False
        return [self._call_captured(method, params) for method, params in chunk]

    def _call_captured(self, method: str, params: Mapping[str, Any] | None) -> Any | RpcError:
        try:
            return self.call(method, params)
        except RpcError as exc:
            return exc

    def _post(self, payload: Any) -> Any:
        try:
            response = self._client.post(self._url, content=orjson.dumps(payload))
        except httpx.TransportError as exc:
            raise from_transport_error(exc, url=self._url) from exc
        try:
            # orjson: a batch of 200 receipts is about 700 kB of JSON, decoded twice as fast.
            answer = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            answer = None
        if _looks_like_jsonrpc(answer):
            return answer
        _raise_http(response, self._url)
        raise InvalidResponse("not a JSON-RPC answer", url=self._url, body=response.text)


def _request(request_id: int, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params:
        request["params"] = dict(params)
    return request


def _chunks(items: Sequence[Call], size: int) -> Iterator[Sequence[Call]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _looks_like_jsonrpc(answer: Any) -> bool:
    if isinstance(answer, list):
        return all(isinstance(a, dict) for a in answer)
    return isinstance(answer, dict) and ("result" in answer or "error" in answer)


def _is_batch_rejection(answer: Any) -> bool:
    error = answer.get("error") if isinstance(answer, dict) else None
    return isinstance(error, dict) and error.get("code") in _BATCH_REJECTED_CODES


def _rpc_error(error: Any, method: str, *, url: str) -> RpcError:
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        raise InvalidResponse(f"{method}: malformed error object {error!r}", url=url)
    message = error.get("message")
    return RpcError(
        error["code"],
        message if isinstance(message, str) else str(message),
        data=error.get("data"),
        method=method,
    )


def _result_of(answer: Mapping[str, Any], method: str, *, url: str) -> Any:
    if answer.get("error") is not None:
        raise _rpc_error(answer["error"], method, url=url)
    if "result" not in answer:
        raise InvalidResponse(f"{method}: answer has neither result nor error", url=url)
    return answer["result"]


def _match_batch(
    answers: list[Any], ids: list[int], chunk: Sequence[Call], *, url: str
) -> list[Any | RpcError]:
    by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
    results: list[Any | RpcError] = []
    for request_id, (method, _params) in zip(ids, chunk, strict=True):
        answer = by_id.get(request_id)
        if answer is None:
            raise InvalidResponse(f"batch answer lacks id {request_id} ({method})", url=url)
        try:
            results.append(_result_of(answer, method, url=url))
        except RpcError as exc:
            results.append(exc)
    return results


def _receipt_or_none(result: Any, *, url: str) -> dict[str, Any] | None:
    if isinstance(result, RpcError):
        if result.code in NOT_FOUND_CODES:
            return None
        raise result
    receipt = result.get("receipt") if isinstance(result, dict) else None
    if not isinstance(receipt, dict):
        raise InvalidResponse(f"receipt result without a receipt object: {result!r}", url=url)
    return receipt


def _raise_http(response: httpx.Response, url: str) -> None:
    status = response.status_code
    text = response.text.strip()[:500] or response.reason_phrase
    if status >= 500:
        raise ServiceUnavailable(f"HTTP {status}: {text}", url=url, status_code=status)
    if status in (401, 403):
        raise AuthError(text, status_code=status)
    if status >= 400:
        raise RequestRejected(text, status_code=status)
