"""REST client of the publishing API (docs/rest-api.md, base path ``/v1``).

One ``httpx.Client`` with a keep-alive connection pool per ``PublishingClient``; every
request carries the ``user-key`` header. Bulk posts (``create_entries``) go over a leaner
pool of ``http.client`` connections (``connectors.http_keepalive``: a fifth of the CPU per
request) unless a transport is injected or a proxy is configured. External IDs and content
are raw ``bytes`` in this API and Base64 on the wire (docs/rest-api.md §3 (Resources and
their fields), encoding rule). Errors are converted to ``connectors.errors`` types, the same
on both paths.
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
    ) -> None:
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

        Each post is operation 6 exactly as ``create_entry`` sends it (same body, same
        error types), over the lean keep-alive pool when it may be used (module docstring).

        Args:
            chain_id: the target chain.
            entries: the entries to post.
            concurrency: posts in flight at once (>= 1; effectively capped by the pool size).

        Returns:
            one ``PostResult`` per entry, in input order. A failing post (any
            ``ConnectorError``) is captured in its result; it never aborts the others.
        """
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if not entries:
            return []
        path = f"/chains/{_seg(chain_id)}/entries"
        pool = self._bulk()

        def post(entry: NewEntry) -> PostResult:
            try:
                if pool is None:
                    entry_hash = self.create_entry(
                        chain_id,
                        entry.external_ids,
                        entry.content,
                        callback_url=callback_url,
                        callback_stages=callback_stages,
                    )
                else:
                    body = self.entry_body(
                        chain_id,
                        entry.external_ids,
                        entry.content,
                        callback_url=callback_url,
                        callback_stages=callback_stages,
                    )
                    entry_hash = _post_entry(pool, path, body)
            except ConnectorError as exc:
                return PostResult(error=exc)
            return PostResult(entry_hash=entry_hash)

        with ThreadPoolExecutor(max_workers=min(concurrency, len(entries))) as executor:
            return list(executor.map(post, entries))

    def _bulk(self) -> KeepAlivePool | None:
        """The lean pool, made on first use; ``None`` where posts must go through httpx."""
        if type(self).create_entry is not PublishingClient.create_entry:
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
    url = str(response.request.url)
    if status >= 500 or status == 429:
        # 429 (rate limited) and 5xx are passing states: the caller retries later.
        raise ServiceUnavailable(f"HTTP {status}: {message}", url=url, status_code=status)
    if status in (401, 403):
        raise AuthError(message, status_code=status)
    error_type = NotFound if status == 404 else RequestRejected
    raise error_type(message, status_code=status, body=body)
