"""Posting many entries to one chain: ``BulkPoster`` owns the chunking and the fallback.

Entries go through the bulk write (``POST /chains/{chain_id}/entries/bulk``,
docs/rest-api.md §5.2), many per request, each answered with its hash or its own error.
An API without that route (an older one answers 404 or 405) gets one operation 6 per entry
instead, from then on; so does a request the API refuses as too large or too long (413, or
a 422 for the whole request), at once. Every request goes through the client's transport
(``connectors.publishing_transport``); the errors are those single posts raise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import orjson

from connectors.errors import ConnectorError, InvalidResponse
from connectors.publishing_transport import (
    Transport,
    raise_for_status,
    request_json,
    send,
    status_error,
)
from ledger.core.hexbytes import is_hash_hex

__all__ = [
    "BULK_MAX_BYTES",
    "BULK_MAX_ENTRIES",
    "BulkPoster",
    "PostResult",
    "bulk_chunks",
    "entry_hash_of",
    "path_segment",
]

#: Most entries per bulk request (the API takes up to 1,000 by default).
BULK_MAX_ENTRIES = 500
#: Most bytes per bulk request body (the API takes up to 4 MiB by default).
BULK_MAX_BYTES = 1 << 20

T = TypeVar("T")
R = TypeVar("R")


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


class BulkPoster:
    """Posts the entry bodies of one chain: in bulk requests, else one operation 6 each.

    Args:
        transport: the client's transport (thread-safe).
        use_route: try the bulk route; ``False``: one operation 6 per entry. Turned off
            for good once the API shows it has no bulk route (404 or 405).
        max_entries, max_bytes: most entries, and body bytes, per bulk request (>= 1).

    Raises:
        ValueError: ``max_entries`` or ``max_bytes`` < 1.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        use_route: bool = True,
        max_entries: int = BULK_MAX_ENTRIES,
        max_bytes: int = BULK_MAX_BYTES,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("bulk_max_entries and bulk_max_bytes must be >= 1")
        self._transport = transport
        self.use_route = use_route
        self._limits = (max_entries, max_bytes)

    def post_one(self, chain_id: str, body: dict[str, Any]) -> str:
        """Operation 6 (``POST /chains/{chain_id}/entries``) of one entry body.

        Returns:
            the entry's hash, 64 lowercase hex characters.

        Raises:
            NotFound: unknown chain. RequestRejected: 4xx such as 422 (``body`` kept).
            AuthError, ServiceUnavailable, InvalidResponse.
        """
        path = f"/chains/{path_segment(chain_id)}/entries"
        answer = request_json(self._transport, "POST", path, orjson.dumps(body))
        return entry_hash_of(answer, path)

    def post(
        self, chain_id: str, bodies: Sequence[dict[str, Any]], *, concurrency: int
    ) -> list[PostResult]:
        """Post ``bodies`` (EntryCreate objects), ``concurrency`` requests at once.

        Returns:
            one ``PostResult`` per body, in order; a failing post is captured in its result.
        """
        if not self.use_route:
            return self._post_each(chain_id, bodies, concurrency)
        chunks = bulk_chunks(bodies, *self._limits)
        answers = _map(lambda c: self._post_bulk(chain_id, c), chunks, concurrency)
        results: list[PostResult | None] = [r for answer in answers for r in answer]
        again = [i for i, result in enumerate(results) if result is None]
        if again:  # the bulk route is missing or refused the request: one post per entry
            singles = self._post_each(chain_id, [bodies[i] for i in again], concurrency)
            for index, result in zip(again, singles, strict=True):
                results[index] = result
        return [result for result in results if result is not None]

    def _post_bulk(self, chain_id: str, chunk: list[bytes]) -> list[PostResult | None]:
        """One bulk request of ``chunk`` (encoded bodies): a result per entry, ``None`` for
        each when the entries are to be posted one by one instead (module docstring)."""
        path = f"/chains/{path_segment(chain_id)}/entries/bulk"
        payload = b'{"entries":[' + b",".join(chunk) + b"]}"
        try:
            answer = send(self._transport, "POST", path, payload)
            if answer.status in (404, 405):
                self.use_route = False
                return [None] * len(chunk)
            if answer.status in (413, 422):  # over this API's limits: a request its own
                return [None] * len(chunk)
            raise_for_status(answer, self._transport.url(path))
            items = _bulk_items(answer.body, len(chunk), path)
        except ConnectorError as exc:
            return [PostResult(error=exc)] * len(chunk)
        return [_item_result(item, path) for item in items]

    def _post_each(
        self, chain_id: str, bodies: Sequence[dict[str, Any]], concurrency: int
    ) -> list[PostResult]:
        def post(body: dict[str, Any]) -> PostResult:
            try:
                return PostResult(entry_hash=self.post_one(chain_id, body))
            except ConnectorError as exc:
                return PostResult(error=exc)

        return _map(post, bodies, concurrency)


def bulk_chunks(
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


def entry_hash_of(answer: Any, path: str) -> str:
    """The ``entry_hash`` of an API answer (an Entry, or a 202 of operation 6), lowercase.

    Raises:
        InvalidResponse: not a JSON object with a 64-hex-character ``entry_hash``.
    """
    if not isinstance(answer, dict):
        raise InvalidResponse(f"expected a JSON object, got {type(answer).__name__}")
    entry_hash = answer.get("entry_hash")
    if not isinstance(entry_hash, str) or not is_hash_hex(entry_hash):
        raise InvalidResponse(f"no valid entry_hash in {answer!r}", url=path)
    return entry_hash.lower()


def path_segment(value: str) -> str:
    """Quote one path segment so an identifier can never change the path."""
    return quote(value, safe="")


def _map(function: Callable[[T], R], items: Sequence[T], concurrency: int) -> list[R]:
    """``function`` of each item, in order, ``concurrency`` at once (inline for one)."""
    if len(items) == 1:
        return [function(items[0])]
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(items)))) as executor:
        return list(executor.map(function, items))


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
            raise status_error(error["code"], message, body=item, url=path)
        return PostResult(entry_hash=entry_hash_of(item, path))
    except ConnectorError as exc:
        return PostResult(error=exc)
