"""REST client of the publishing API (docs/rest-api.md, base path ``/v1``).

Every request of a ``PublishingClient`` goes one way: through the transport chosen when it
is built (``connectors.publishing_transport``: the lean urllib3 keep-alive pool, or
``httpx`` when an ``httpx`` transport is injected or a proxy is configured), carrying the
``user-key`` header, its answer mapped to ``connectors.errors`` types in one place.
External IDs and content are raw ``bytes`` in this API and Base64 on the wire
(docs/rest-api.md §3 (Resources and their fields), encoding rule).

``create_entries`` hands the bodies to a ``BulkPoster`` (``connectors.publishing_bulk``):
many entries per request through the bulk write (docs/rest-api.md §5.2), falling back to
one operation 6 per entry where the API lacks or refuses that route. Every entry's body,
single or bulk, is built by ``entry_body``, which an ``EntryBodyHook`` given at
construction may extend (the pipeline adds each entry's own callback URL).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import orjson

from connectors.errors import InvalidResponse
from connectors.publishing_bulk import (
    BULK_MAX_BYTES,
    BULK_MAX_ENTRIES,
    BulkPoster,
    PostResult,
    entry_hash_of,
    path_segment,
)
from connectors.publishing_transport import Transport, open_transport, request_json

__all__ = [
    "CallbackStage",
    "EntryBodyHook",
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


#: ``(chain_id hex, entry, body) -> body``: extends the JSON body (EntryCreate) operation 6
#: posts for one entry of a chain, single or bulk (``PublishingClient(entry_body_hook=)``).
EntryBodyHook = Callable[[str, NewEntry, dict[str, Any]], dict[str, Any]]


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
        max_connections: size of the keep-alive pool (bounds ``create_entries`` concurrency).
        transport: an ``httpx`` transport to use instead of the network
            (``httpx.MockTransport`` in tests); every request then goes through it.
        bulk: send ``create_entries`` through the bulk write (module docstring); ``False``:
            one operation 6 per entry.
        bulk_max_entries, bulk_max_bytes: most entries, and body bytes, per bulk request.
        entry_body_hook: extends every entry's body (``EntryBodyHook``), single or bulk.

    Use as a context manager or call ``close()``. Safe to share between threads.

    Raises:
        ValueError: ``bulk_max_entries`` or ``bulk_max_bytes`` < 1, or ``base_url`` is not
            an ``http(s)`` URL.
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
        entry_body_hook: EntryBodyHook | None = None,
    ) -> None:
        headers = {"user-key": api_key, "accept": "application/json"}
        self._transport: Transport = open_transport(
            base_url,
            headers=headers,
            timeout_s=timeout_s,
            max_connections=max_connections,
            transport=transport,
        )
        self._bulk = BulkPoster(
            self._transport,
            use_route=bulk,
            max_entries=bulk_max_entries,
            max_bytes=bulk_max_bytes,
        )
        self.entry_body_hook = entry_body_hook

    def close(self) -> None:
        """Close the pooled connections."""
        self._transport.close()

    def __enter__(self) -> PublishingClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def info(self) -> dict[str, Any]:
        """Operation 1 (``GET /``): ``{"api_version": str, "links": {...}}``."""
        return _json_object(self._request("GET", "/"))

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
        answer = _json_object(self._request("POST", "/chains", body))
        chain_id = answer.get("chain_id")
        if not isinstance(chain_id, str) or not chain_id:
            raise InvalidResponse(f"no chain_id in {answer!r}", url="/chains")
        return chain_id

    def get_chain(self, chain_id: str) -> dict[str, Any] | None:
        """Operation 5 (``GET /chains/{chain_id}``): the Chain object, ``None`` on 404.

        ``external_ids`` in the result stay Base64 strings (decode with ``from_base64``).
        """
        answer = self._request("GET", f"/chains/{path_segment(chain_id)}", allow_404=True)
        return None if answer is None else _json_object(answer)

    def search_chains(self, external_ids: Sequence[bytes]) -> dict[str, Any] | None:
        """Operation 4 (``POST /chains/search``): the matching Chain, ``None`` on 404."""
        body = {"external_ids": [to_base64(x) for x in external_ids]}
        answer = self._request("POST", "/chains/search", body, allow_404=True)
        return None if answer is None else _json_object(answer)

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
        body = self.entry_body(
            chain_id,
            external_ids,
            content,
            callback_url=callback_url,
            callback_stages=callback_stages,
        )
        return self._bulk.post_one(chain_id, body)

    def entry_body(
        self,
        chain_id: str,
        external_ids: Sequence[bytes],
        content: bytes,
        *,
        callback_url: str | None = None,
        callback_stages: Sequence[CallbackStage] | None = None,
    ) -> dict[str, Any]:
        """The JSON body (EntryCreate) that operation 6 posts for one entry of ``chain_id``:
        the one ``create_entry`` and ``create_entries`` both send, extended by the
        ``entry_body_hook`` when there is one."""
        body = _entry_body(external_ids, content, callback_url, callback_stages)
        if self.entry_body_hook is None:
            return body
        return self.entry_body_hook(chain_id, NewEntry(tuple(external_ids), content), body)

    def get_entry(self, chain_id: str, entry_hash: str) -> dict[str, Any] | None:
        """Operation 11: the Entry object (plus any extra fields such as ``stage``), ``None`` on 404.

        ``external_ids`` and ``content`` stay Base64 strings (decode with ``from_base64``).
        """
        path = f"/chains/{path_segment(chain_id)}/entries/{path_segment(entry_hash)}"
        answer = self._request("GET", path, allow_404=True)
        return None if answer is None else _json_object(answer)

    def failed_entries(self, chain_id: str, *, page_size: int = 1000) -> list[str]:
        """Hashes of the chain's writes the API gave up (operation 7 with ``stage=failed``,
        docs/rest-api.md §5), in chain order, every page; ``[]`` for an unknown chain.

        Raises:
            AuthError, RequestRejected (an API without the stage filter answers 400),
            ServiceUnavailable, InvalidResponse.
        """
        hashes: list[str] = []
        path = f"/chains/{path_segment(chain_id)}/entries"
        while True:
            query = f"{path}?stage=failed&limit={page_size}&offset={len(hashes)}"
            answer = self._request("GET", query, allow_404=True)
            if answer is None:
                return []
            items = _json_object(answer).get("items")
            if not isinstance(items, list):
                raise InvalidResponse(f"no items in {answer!r}", url=path)
            hashes.extend(entry_hash_of(item, path) for item in items)
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
        ``create_entry`` sends (``entry_body``); where it cannot be used (module
        docstring), each post is operation 6 exactly as ``create_entry`` sends it, with the
        same error types (``connectors.publishing_bulk.BulkPoster``).

        Args:
            chain_id: the target chain.
            entries: the entries to post.
            concurrency: requests in flight at once (>= 1; effectively capped by the pool
                size).

        Returns:
            one ``PostResult`` per entry, in input order. A failing post (any
            ``ConnectorError``) is captured in its result; it never aborts the others.

        Raises:
            ValueError: ``concurrency`` < 1.
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
        return self._bulk.post(chain_id, bodies, concurrency=concurrency)

    def _request(self, method: str, path: str, body: Any = None, *, allow_404: bool = False) -> Any:
        payload = None if body is None else orjson.dumps(body)
        return request_json(self._transport, method, path, payload, allow_404=allow_404)


def _json_object(answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise InvalidResponse(f"expected a JSON object, got {type(answer).__name__}")
    return answer


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
