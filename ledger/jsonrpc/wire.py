"""The JSON-RPC 2.0 wire codec: request and response objects, and the rules for reading replies.

Pure: bytes and decoded JSON in, bytes and results out; no HTTP library, no server. The
clients (``ledger.jsonrpc.client``) and the servers (``ledger.jsonrpc.server``, the node's
own HTTP front) encode with it, so every request and response object has one shape
(JSON-RPC 2.0 specification, https://www.jsonrpc.org/specification, docs/formats.md §4 and §5).

Request: ``{"jsonrpc": "2.0", "id": <int>, "method": <str>, "params": <object>}``; ``params``
is left out when the caller passes ``None`` (an empty mapping is sent as ``{}``). Pydantic
models are dumped by alias (``{"tx-name": ...}``). Ids count up from 1 per endpoint.

Rules for a reply (client side), in :class:`JsonRpcCodec`:

1. **HTTP status.** A body that is a JSON-RPC response is read whatever the status:
   factomd answers errors with HTTP 400, factom-walletd with 200, and our servers refuse
   oversized bodies with 413 and an Invalid Request object. A body that is not a JSON-RPC
   response raises ``JsonRpcProtocolError`` carrying the status and the body text, so the
   caller can tell an unreachable back end (5xx) from a refusal (4xx).
2. **Error objects.** ``error`` must be an object with an integer ``code``; ``message`` is
   read as text and ``data`` kept as sent. Anything else is a protocol error.
3. **Ids of a single call.** A result must carry the request's id. An error may carry it or
   ``null`` (a server that could not read the request cannot echo its id).
4. **Batches.** Replies are matched to requests by id, not by position; a request left
   without a reply is a protocol error. An error item is returned in its place as a
   ``JsonRpcCallError`` (not raised), so one failing call does not hide the others.
5. **A whole batch refused.** A batch answered with one error object (parse error, body
   too large, a server without batch support) raises that error as a ``JsonRpcCallError``
   whose ``method`` is ``None``. A batch answered with one result is a protocol error.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from pydantic import BaseModel

from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcError, JsonRpcProtocolError

__all__ = [
    "Call",
    "JsonRpcCodec",
    "Params",
    "encode_json",
    "error_response",
    "request_object",
    "result_response",
]

Params = Mapping[str, Any] | BaseModel | None
"""The ``params`` of a call: named fields (a mapping or a pydantic model), or None to omit."""
Call = tuple[str, Params]
"""One call of a batch: ``(method, params)``."""


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def encode_json(value: Any) -> bytes:
    """orjson-encode ``value``; pydantic models are dumped with ``mode="json", by_alias=True``.

    Raises:
        TypeError: (``orjson.JSONEncodeError``) for a value that cannot be encoded.
    """
    return orjson.dumps(value, default=_default)


def request_object(request_id: int | str, method: str, params: Params = None) -> dict[str, Any]:
    """The request object of one call (``params`` left out when None)."""
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        request["params"] = params
    return request


def result_response(request_id: Any, result: Any) -> dict[str, Any]:
    """The success response object ``{"jsonrpc", "id", "result"}``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, error: JsonRpcError) -> dict[str, Any]:
    """The error response object ``{"jsonrpc", "id", "error": {"code", "message", "data"?}}``."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_dict()}


class JsonRpcCodec:
    """Encoding of calls to one endpoint and the reading of its replies (module rules).

    Args:
        url: the endpoint, used only in error messages (give it without user info).

    Thread-safe: ids come from ``itertools.count``, whose ``next`` is atomic in CPython.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        """A request id not used before by this codec."""
        return next(self._ids)

    def encode_call(self, method: str, params: Params) -> tuple[int, bytes]:
        """``(request id, request bytes)`` of one call."""
        request_id = next(self._ids)
        return request_id, encode_json(request_object(request_id, method, params))

    def encode_batch(self, calls: Sequence[Call]) -> tuple[list[int], bytes]:
        """``(request ids in call order, batch bytes)`` of several calls."""
        ids = [next(self._ids) for _ in calls]
        requests = [request_object(i, m, p) for i, (m, p) in zip(ids, calls, strict=True)]
        return ids, encode_json(requests)

    def decode_call(self, status: int, content: bytes, *, request_id: int, method: str) -> Any:
        """The ``result`` of a single call's reply (rules 1-3).

        Raises:
            JsonRpcCallError: the reply is an error object.
            JsonRpcProtocolError: the reply is not a JSON-RPC response to this request.
        """
        reply = self._decode(status, content)
        outcome = self._outcome(reply, status, content, method)
        reply_id = reply.get("id")
        if isinstance(outcome, JsonRpcCallError):
            if reply_id not in (request_id, None):
                raise self._problem("response id does not match the request", status, content)
            raise outcome
        if reply_id != request_id:
            raise self._problem("response id does not match the request", status, content)
        return outcome

    def decode_batch(
        self, status: int, content: bytes, *, ids: Sequence[int], calls: Sequence[Call]
    ) -> list[Any]:
        """Results (or ``JsonRpcCallError`` objects, not raised) in call order (rules 1, 2, 4, 5).

        Raises:
            JsonRpcCallError: the whole batch was refused with one error object (rule 5).
            JsonRpcProtocolError: the reply is not a JSON-RPC batch response to these requests.
        """
        replies = self._decode(status, content)
        return self.read_batch(replies, ids=ids, calls=calls, status=status, content=content)

    def read_batch(
        self,
        replies: Any,
        *,
        ids: Sequence[int],
        calls: Sequence[Call],
        status: int = 200,
        content: bytes = b"",
    ) -> list[Any]:
        """``decode_batch`` of an already decoded reply (an in-process endpoint's response
        objects, ``ledger.jsonrpc.local``); ``status`` and ``content`` only go into errors.

        Raises:
            JsonRpcCallError: the whole batch was refused with one error object (rule 5).
            JsonRpcProtocolError: the reply is not a JSON-RPC batch response to these requests.
        """
        if isinstance(replies, dict):
            outcome = self._outcome(replies, status, content, None)
            if isinstance(outcome, JsonRpcCallError):
                raise outcome
            raise self._problem("a batch got a single result", status, content)
        if not isinstance(replies, list):
            raise self._problem("batch response is not an array", status, content)
        by_id = {r.get("id"): r for r in replies if isinstance(r, dict)}
        results = []
        for request_id, (method, _) in zip(ids, calls, strict=True):
            reply = by_id.get(request_id)
            if reply is None:
                # Both phrasings: callers of either former client match on one of them.
                problem = f"batch answer lacks id {request_id}: no response for {method!r}"
                raise self._problem(problem, status, content)
            results.append(self._outcome(reply, status, content, method))
        return results

    def _decode(self, status: int, content: bytes) -> Any:
        try:
            # orjson: a batch of 200 receipts is about 700 kB of JSON, decoded twice as fast.
            return orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise self._problem("body is not JSON", status, content) from exc

    def _outcome(self, reply: Any, status: int, content: bytes, method: str | None) -> Any:
        """The result of one response object, or the JsonRpcCallError it carries (not raised)."""
        if not isinstance(reply, dict):
            raise self._problem("response is not an object", status, content)
        error = reply.get("error")
        if error is not None:
            if not isinstance(error, dict) or not _is_int(error.get("code")):
                raise self._problem("malformed error object", status, content)
            message = error.get("message", "")
            return JsonRpcCallError(
                error["code"],
                message if isinstance(message, str) else str(message),
                error.get("data"),
                method=method,
            )
        if "result" not in reply:
            raise self._problem("response has neither result nor error", status, content)
        return reply["result"]

    def _problem(self, problem: str, status: int, content: bytes) -> JsonRpcProtocolError:
        message = f"invalid JSON-RPC reply from {self.url} (HTTP {status}): {problem}"
        body = content[:4096].decode("utf-8", "replace")
        return JsonRpcProtocolError(message, url=self.url, status_code=status, body=body)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
