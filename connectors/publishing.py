"""REST client of the publishing API (docs/rest-api.md, base path ``/v1``).

One ``httpx.Client`` with a keep-alive connection pool per ``PublishingClient``; every
request carries the ``user-key`` header. Bulk posts (``create_entries``) go over a leaner
pool of ``http.client`` connections (``connectors.http_keepalive``: a fifth of the CPU per
request) unless a transport is injected or a proxy is configured. External IDs and content
are raw ``bytes`` in this API and Base64 on the wire (docs/rest-api.md §3 (Resources and
their fields), encoding rule). Errors are converted to ``connectors.errors`` types, the same
on both paths.

``create_entries`` sends many entries per request through the bulk write
(``POST /chains/{chain_id}/entries/bulk``, docs/rest-api.md §5.2), each entry answered
with its hash or its own error. An API without that route (an older one answers 404 or
405) gets one operation 6 per entry instead, from then on; so does a request the API
refuses as too large or too long (413, or a 422 for the whole request), at once.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import httpx
import orjson

from connectors.errors import (
    AuthError,
    ConnectorError,
    InvalidResponse,
    NotFound,
    RequestRejected,
    ServiceUnavailable,
    from_transport_error,
)
from connectors.http_keepalive import KeepAlivePool, RawResponse, proxy_configured
from ledger.core.hexbytes import is_hash_hex

__all__ = [
    "CallbackStage",
    "NewEntry",
    "PostResult",
    "PublishingClient",
    "WriteFailure",
    "from_base64",
    "to_base64",
    "write_failure",
]

CallbackStage = Literal["multi_az", "ledger", "anchor"]

#: Most entries per bulk request (the API takes up to 1,000 by default).
BULK_MAX_ENTRIES = 500
#: Most bytes per bulk request body (the API takes up to 4 MiB by default).
BULK_MAX_BYTES = 1 << 20
_BULK_SUFFIX = "/bulk"


def to_base64(data: bytes) -> str:
    """Standard Base64 (with padding) of raw bytes, as the REST API sends them."""
    return base64.b64encode(data).decode("ascii")


def from_base64(text: str) -> bytes:
    """Decode a standard Base64 string from the REST API.

    Raises:
        InvalidResponse: the text is not valid Base64.
    """
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidResponse(f"invalid Base64 value: {text[:80]!r}") from exc


@dataclass(frozen=True)
class NewEntry:
    """An entry to post: external IDs and content as raw bytes."""

    external_ids: tuple[bytes, ...]
    content: bytes


@dataclass(frozen=True)
class PostResult:
    """Outcome of one post of ``create_entries``: exactly one of the two is set.

    Attributes:
        entry_hash: 64 lowercase hex chars of the accepted entry.
        error: the connector error the post raised (check ``error.retryable``).
    """

    entry_hash: str | None = None
    error: ConnectorError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class WriteFailure:
    """Why the publishing API gave a write up (an entry read at stage ``failed``,
    docs/rest-api.md §3 and §4).

    Attributes:
        reason: the API's one-line reason.
        failed_at: when it was given up, ISO 8601 UTC as the API wrote it (``None`` when
            the API does not know).
        attempts: submissions the API made, the refused one included.
    """

    reason: str
    failed_at: str | None
    attempts: int


def write_failure(entry: dict[str, Any]) -> WriteFailure | None:
    """The failure of an Entry (or Chain) read, ``None`` unless its ``stage`` is ``failed``.

    Raises:
        InvalidResponse: stage ``failed`` with a malformed ``failure`` object.
    """
    if entry.get("stage") != "failed":
        return None
    failure = entry.get("failure")
    if not isinstance(failure, dict) or not isinstance(failure.get("reason"), str):
        raise InvalidResponse(f"a failed write without a failure reason: {failure!r}")
    failed_at, attempts = failure.get("failed_at"), failure.get("attempts")
    return WriteFailure(
        reason=failure["reason"],
        failed_at=failed_at if isinstance(failed_at, str) else None,
        attempts=attempts if isinstance(attempts, int) else 0,
    )


class PublishingClient:
    """Synchronous client of the publishing REST API.

    Args:
        base_url: API root including the base path, e.g. ``http://127.0.0.1:8090/v1``.
        api_key: the account's key, sent as the ``user-key`` header.
        timeout_s: connect/read/write timeout in seconds (waiting for a pooled connection
            is not limited).
        max_connections: size of each keep-alive pool (bounds ``create_entries`` concurrency).
        transport: an ``httpx`` transport to use instead of the network
            (``httpx.MockTransport`` in tests); every request then goes through it.
        bulk: send ``create_entries`` through the bulk write (module docstring); ``False``:
            one operation 6 per entry.
        bulk_max_entries, bulk_max_bytes: most entries, and body bytes, per bulk request.

    Use as a context manager or call ``close()``. Safe to share between threads.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 10.0,
        max_connections: int = 16,
        transport: httpx.BaseTransport | None = None,
        bulk: bool = True,
        bulk_max_entries: int = BULK_MAX_ENTRIES,
        bulk_max_bytes: int = BULK_MAX_BYTES,
    ) -> None:
        if bulk_max_entries < 1 or bulk_max_bytes < 1:
            raise ValueError("bulk_max_entries and bulk_max_bytes must be >= 1")
        # False once the API showed it has no bulk route (or when it is not to be used).
        self._bulk_route = bulk
        self._bulk_limits = (bulk_max_entries, bulk_max_bytes)
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        headers = {"user-key": api_key, "accept": "application/json"}
        # The lean pool connects directly: not through an injected transport or a proxy.
        self._bulk_allowed = transport is None and not proxy_configured(base_url)
        self._bulk_pool: KeepAlivePool | None = None
        self._bulk_lock = threading.Lock()
        self._bulk_args = (base_url.rstrip("/"), headers, timeout_s, max_connections)
        if transport is None:
            transport = httpx.HTTPTransport(limits=limits, retries=1)
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout_s, pool=None),
            transport=transport,
        )

    def close(self) -> None:
        """Close the pooled connections."""
        with self._bulk_lock:
            pool, self._bulk_pool, self._bulk_allowed = self._bulk_pool, None, False
        if pool is not None:
            pool.close()
        self._client.close()

    def __enter__(self) -> PublishingClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def info(self) -> dict[str, Any]:
        """Operation 1 (``GET /``): ``{"api_version": str, "links": {...}}``."""
        return self._json_object(self._request("GET", "/"))

    def create_chain(
        self,
        external_ids: Sequence[bytes],
        content: bytes,
        *,
        callback_url: str | None = None,
        callback_stages: Sequence[CallbackStage] | None = None,
    ) -> str:
        """Operation 2 (``POST /chains``): create a chain and its first entry.

        Returns:
            the new chain's ``chain_id`` string.

        Raises:
            AuthError, RequestRejected, ServiceUnavailable, InvalidResponse.
        """
        body = _entry_body(external_ids, content, callback_url, callback_stages)
        answer = self._json_object(self._request("POST", "/chains", json=body))
        chain_id = answer.get("chain_id")
        if not isinstance(chain_id, str) or not chain_id:
            raise InvalidResponse(f"no chain_id in {answer!r}", url="/chains")
        return chain_id

    def get_chain(self, chain_id: str) -> dict[str, Any] | None:
        """Operation 5 (``GET /chains/{chain_id}``): the Chain object, ``None`` on 404.

        ``external_ids`` in the result stay Base64 strings (decode with ``from_base64``).
        """
        answer = self._request("GET", f"/chains/{_seg(chain_id)}", allow_404=True)
        return None if answer is None else self._json_object(answer)

    def search_chains(self, external_ids: Sequence[bytes]) -> dict[str, Any] | None:
        """Operation 4 (``POST /chains/search``): the matching Chain, ``None`` on 404."""
        body = {"external_ids": [to_base64(x) for x in external_ids]}
        answer = self._request("POST", "/chains/search", json=body, allow_404=True)
        return None if answer is None else self._json_object(answer)

    def create_entry(
        self,
        chain_id: str,
        external_ids: Sequence[bytes],
        content: bytes,
        *,
        callback_url: str | None = None,
        callback_stages: Sequence[CallbackStage] | None = None,
    ) -> str:
        """Operation 6 (``POST /chains/{chain_id}/entries``): append an entry.

        Returns:
            the new entry's hash, 64 lowercase hex characters.

        Raises:
            NotFound: unknown chain. RequestRejected: 4xx such as 422 (``body`` kept).
            AuthError, ServiceUnavailable, InvalidResponse.
        """
        path = f"/chains/{_seg(chain_id)}/entries"
        body = self.entry_body(
            chain_id,
            external_ids,
            content,
            callback_url=callback_url,
            callback_stages=callback_stages,
        )
        return _entry_hash_of(self._json_object(self._request("POST", path, json=body)), path)

    def entry_body(
        self,
        chain_id: str,
        external_ids: Sequence[bytes],
        content: bytes,
        *,
        callback_url: str | None = None,
        callback_stages: Sequence[CallbackStage] | None = None,
    ) -> dict[str, Any]:
        """The JSON body (EntryCreate) that operation 6 posts for one entry of ``chain_id``.

        ``create_entry`` and ``create_entries`` both build their bodies here, so a subclass
        that adds fields (a per-entry callback URL, say) overrides this one method.
        """
        return _entry_body(external_ids, content, callback_url, callback_stages)

    def get_entry(self, chain_id: str, entry_hash: str) -> dict[str, Any] | None:
        """Operation 11: the Entry object (plus any extra fields such as ``stage``), ``None`` on 404.

        ``external_ids`` and ``content`` stay Base64 strings (decode with ``from_base64``).
        """
        path = f"/chains/{_seg(chain_id)}/entries/{_seg(entry_hash)}"
        answer = self._request("GET", path, allow_404=True)
        return None if answer is None else self._json_object(answer)

    def failed_entries(self, chain_id: str, *, page_size: int = 1000) -> list[str]:
        """Hashes of the chain's writes the API gave up (operation 7 with ``stage=failed``,
        docs/rest-api.md §5), in chain order, every page; ``[]`` for an unknown chain.

        Raises:
            AuthError, RequestRejected (an API without the stage filter answers 400),
            ServiceUnavailable, InvalidResponse.
        """
        hashes: list[str] = []
        path = f"/chains/{_seg(chain_id)}/entries"
        while True:
            query = f"{path}?stage=failed&limit={page_size}&offset={len(hashes)}"
            answer = self._request("GET", query, allow_404=True)
            if answer is None:
                return []
            items = self._json_object(answer).get("items")
            if not isinstance(items, list):
                raise InvalidResponse(f"no items in {answer!r}", url=path)
            hashes.extend(_entry_hash_of(self._json_object(item), path) for item in items)
            if len(items) < page_size:
                return hashes

    def create_entries(
        self,
        chain_id: str,
        entries: Sequence[NewEntry],
        *,
        concurrency: int = 8,
        callback_url: str | None = None,
        callback_stages: Sequence[CallbackStage] | None = None,
    ) -> list[PostResult]:
        """Post many entries to one chain concurrently over the pooled connections.

        Through the bulk write, many entries per request, each with the body
        ``create_entry`` sends (``entry_body``); where it cannot be used (module docstring,
        or a subclass that overrides ``create_entry``), each post is operation 6 exactly as
        ``create_entry`` sends it. Either way the same error types, over the lean
        keep-alive pool when it may be used (module docstring).

        Args:
            chain_id: the target chain.
            entries: the entries to post.
            concurrency: requests in flight at once (>= 1; effectively capped by the pool
                size).

        Returns:
            one ``PostResult`` per entry, in input order. A failing post (any
            ``ConnectorError``) is captured in its result; it never aborts the others.
        """
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if not entries:
            return []
        bodies = [
            self.entry_body(
                chain_id,
                entry.external_ids,
                entry.content,
                callback_url=callback_url,
                callback_stages=callback_stages,
            )
            for entry in entries
        ]
        callbacks = (callback_url, callback_stages)
        if not self._bulk_route or not self._plain_create_entry():
            return self._post_each(chain_id, entries, bodies, concurrency, callbacks=callbacks)
        chunks = _bulk_chunks(bodies, *self._bulk_limits)
        if len(chunks) == 1:
            answers = [self._post_bulk(chain_id, chunks[0])]
        else:
            with ThreadPoolExecutor(max_workers=min(concurrency, len(chunks))) as executor:
                answers = list(executor.map(lambda c: self._post_bulk(chain_id, c), chunks))
        results: list[PostResult | None] = [r for answer in answers for r in answer]
        again = [i for i, result in enumerate(results) if result is None]
        if again:  # the bulk route is missing or refused the request: one post per entry
            singles = self._post_each(
                chain_id,
                [entries[i] for i in again],
                [bodies[i] for i in again],
                concurrency,
                callbacks=callbacks,
            )
            for index, result in zip(again, singles, strict=True):
                results[index] = result
        return [result for result in results if result is not None]

    def _post_bulk(self, chain_id: str, chunk: list[bytes]) -> list[PostResult | None]:
        """One bulk request of ``chunk`` (encoded bodies): a result per entry, ``None`` for
        each when the entries are to be posted one by one instead (module docstring)."""
        path = f"/chains/{_seg(chain_id)}/entries{_BULK_SUFFIX}"
        payload = b'{"entries":[' + b",".join(chunk) + b"]}"
        try:
            status, body, response = self._post_raw(path, payload)
            if status in (404, 405):
                self._bulk_route = False
                return [None] * len(chunk)
            if status == 413 or status == 422:  # over this API's limits: a request its own
                return [None] * len(chunk)
            if status >= 400:
                _raise_for_status(response())
            items = _bulk_items(body, len(chunk), path)
        except ConnectorError as exc:
            return [PostResult(error=exc)] * len(chunk)
        return [_item_result(item, path) for item in items]

    def _post_raw(self, path: str, payload: bytes) -> tuple[int, bytes, Any]:
        """POST a JSON ``payload``: status, body and a maker of the ``httpx.Response``
        (for the error mapping) of the answer, over the lean pool when it may be used."""
        pool = self._bulk()
        if pool is None:
            try:
                response = self._client.post(
                    path, content=payload, headers={"content-type": "application/json"}
                )
            except httpx.TransportError as exc:
                raise from_transport_error(exc, url=path) from exc
            return response.status_code, response.content, lambda: response
        answer = pool.request("POST", path, payload, content_type="application/json")
        return answer.status, answer.body, lambda: _as_httpx(answer, "POST", pool.url(path))

    def _post_each(
        self,
        chain_id: str,
        entries: Sequence[NewEntry],
        bodies: Sequence[dict[str, Any]],
        concurrency: int,
        *,
        callbacks: tuple[str | None, Sequence[CallbackStage] | None],
    ) -> list[PostResult]:
        """Operation 6 for each entry (``bodies``: their ``entry_body``), ``concurrency``
        at once; ``callbacks``: the ``callback_url`` and ``callback_stages`` asked of
        ``create_entries``, passed on to a ``create_entry`` that builds its own body."""
        path = f"/chains/{_seg(chain_id)}/entries"
        pool = self._bulk()

        def post(pair: tuple[NewEntry, dict[str, Any]]) -> PostResult:
            entry, body = pair
            try:
                if pool is None:
                    entry_hash = self.create_entry(
                        chain_id,
                        entry.external_ids,
                        entry.content,
                        callback_url=callbacks[0],
                        callback_stages=callbacks[1],
                    )
                else:
                    entry_hash = _post_entry(pool, path, body)
            except ConnectorError as exc:
                return PostResult(error=exc)
            return PostResult(entry_hash=entry_hash)

        pairs = list(zip(entries, bodies, strict=True))
        with ThreadPoolExecutor(max_workers=min(concurrency, len(entries))) as executor:
            return list(executor.map(post, pairs))

    def _plain_create_entry(self) -> bool:
        """False when a subclass customises single posts: then every post of a batch is
        its ``create_entry`` (neither the lean pool nor the bulk route)."""
        return type(self).create_entry is PublishingClient.create_entry

    def _bulk(self) -> KeepAlivePool | None:
        """The lean pool, made on first use; ``None`` where posts must go through httpx."""
        if not self._plain_create_entry():
            # A subclass customises single posts; honour it for every post of the batch.
            return None
        with self._bulk_lock:
            if self._bulk_pool is None and self._bulk_allowed:
                base_url, headers, timeout_s, max_connections = self._bulk_args
                tls = httpx.create_ssl_context() if base_url.startswith("https:") else None
                self._bulk_pool = KeepAlivePool(
                    base_url,
                    headers=headers,
                    timeout_s=timeout_s,
                    max_connections=max_connections,
                    ssl_context=tls,
                )
            return self._bulk_pool

    def _request(self, method: str, path: str, *, json: Any = None, allow_404: bool = False) -> Any:
        try:
            response = self._client.request(method, path, json=json)
        except httpx.TransportError as exc:
            raise from_transport_error(exc, url=path) from exc
        if allow_404 and response.status_code == 404:
            return None
        _raise_for_status(response)
        try:
            return response.json()
        except ValueError as exc:
            raise InvalidResponse("response is not JSON", url=path, body=response.text) from exc

    @staticmethod
    def _json_object(answer: Any) -> dict[str, Any]:
        if not isinstance(answer, dict):
            raise InvalidResponse(f"expected a JSON object, got {type(answer).__name__}")
        return answer


def _post_entry(pool: KeepAlivePool, path: str, body: dict[str, Any]) -> str:
    """Operation 6 over the lean pool; the answer is checked as ``create_entry`` checks it."""
    answer = pool.request("POST", path, orjson.dumps(body), content_type="application/json")
    if answer.status >= 400:
        _raise_for_status(_as_httpx(answer, "POST", pool.url(path)))
    try:
        decoded = orjson.loads(answer.body)
    except orjson.JSONDecodeError as exc:
        text = answer.body.decode("utf-8", "replace")
        raise InvalidResponse("response is not JSON", url=path, body=text) from exc
    return _entry_hash_of(PublishingClient._json_object(decoded), path)


def _bulk_chunks(
    bodies: Sequence[dict[str, Any]], max_entries: int, max_bytes: int
) -> list[list[bytes]]:
    """The encoded ``bodies`` in consecutive chunks of at most ``max_entries`` entries and
    about ``max_bytes`` bytes of body (an entry larger than that goes alone)."""
    chunks: list[list[bytes]] = []
    size = max_bytes
    for body in bodies:
        encoded = orjson.dumps(body)
        if not chunks or len(chunks[-1]) >= max_entries or size + len(encoded) + 1 > max_bytes:
            chunks.append([])
            size = len(b'{"entries":[]}')
        chunks[-1].append(encoded)
        size += len(encoded) + 1
    return chunks


def _bulk_items(body: bytes, count: int, path: str) -> list[Any]:
    """The ``items`` of a bulk write's 202 answer, checked to be ``count`` long."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        text = body.decode("utf-8", "replace")
        raise InvalidResponse("response is not JSON", url=path, body=text) from exc
    items = decoded.get("items") if isinstance(decoded, dict) else None
    if not isinstance(items, list) or len(items) != count:
        raise InvalidResponse(f"expected {count} items in the bulk answer", url=path)
    return items


def _item_result(item: Any, path: str) -> PostResult:
    """One entry's answer in a bulk write: its hash, or its error as operation 6 raises it."""
    try:
        if not isinstance(item, dict):
            raise InvalidResponse(f"a bulk answer item is not an object: {item!r}", url=path)
        error = item.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            message = str(error.get("message") or error.get("name") or "error")
            raise _status_error(error["code"], message, body=item, url=path)
        return PostResult(entry_hash=_entry_hash_of(item, path))
    except ConnectorError as exc:
        return PostResult(error=exc)


def _as_httpx(answer: RawResponse, method: str, url: str) -> httpx.Response:
    """An error answer of the lean pool as an ``httpx.Response`` (one error mapping)."""
    request = httpx.Request(method, url)
    return httpx.Response(
        answer.status, headers=dict(answer.headers), content=answer.body, request=request
    )


def _entry_hash_of(answer: dict[str, Any], path: str) -> str:
    entry_hash = answer.get("entry_hash")
    if not isinstance(entry_hash, str) or not is_hash_hex(entry_hash):
        raise InvalidResponse(f"no valid entry_hash in {answer!r}", url=path)
    return entry_hash.lower()


def _seg(value: str) -> str:
    """Quote one path segment so an identifier can never change the path."""
    return quote(value, safe="")


def _entry_body(
    external_ids: Sequence[bytes],
    content: bytes,
    callback_url: str | None,
    callback_stages: Sequence[CallbackStage] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "external_ids": [to_base64(x) for x in external_ids],
        "content": to_base64(content),
    }
    if callback_url is not None:
        body["callback_url"] = callback_url
    if callback_stages is not None:
        body["callback_stages"] = list(callback_stages)
    return body


def _error_message(response: httpx.Response) -> tuple[str, Any]:
    """(message, decoded JSON body or None) from an error response of unknown shape."""
    try:
        body = response.json()
    except ValueError:
        return (response.text.strip() or response.reason_phrase), None
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, dict) and "message" in value:
                value = value["message"]
            if value:
                return (value if isinstance(value, str) else str(value)), body
    return str(body), body


def _raise_for_status(response: httpx.Response) -> None:
    status = response.status_code
    if status < 400:
        return
    message, body = _error_message(response)
    raise _status_error(status, message, body=body, url=str(response.request.url))


def _status_error(status: int, message: str, *, body: Any, url: str) -> ConnectorError:
    """The connector error of an HTTP error ``status`` (of a response, or of one entry of
    a bulk answer)."""
    if status >= 500 or status == 429:
        # 429 (rate limited) and 5xx are passing states: the caller retries later.
        return ServiceUnavailable(f"HTTP {status}: {message}", url=url, status_code=status)
    if status in (401, 403):
        return AuthError(message, status_code=status)
    error_type = NotFound if status == 404 else RequestRejected
    return error_type(message, status_code=status, body=body)
