"""The bulk write, an extension: many entries of one chain in one request.

``POST /v1/chains/{chain_id}/entries/bulk`` with ``{"entries": [EntryCreate, ...]}``
(docs/rest-api.md §5.2). Each item is operation 6 exactly (``writes.entry_request``: the
same Base64, payload, callback and chain checks), and all the items that pass are handed
to the group-commit writer together (``GroupCommitWriter.submit_many``), so they are
committed in one database transaction, numbered in the order sent. Why: a client with
thousands of documents paid one HTTP request per entry, and the API spent more CPU on the
requests than on the writes (100,000 entries took 87 s to post one by one).

The answer is HTTP 202 with one item per entry, in order: the 202 body of operation 6
(``{"entry_hash", "chain_id", "stage"}``) or the error body that operation 6 would have
answered for that entry (``{"error": {"code", "name", "message"}}``), so one bad entry
never costs the others. The request as a whole is refused, with nothing written, for what
operation 6 refuses before its body (403 key, 429 rate limit, 415 content type), for a
body above ``bulk_max_body_bytes`` (413), for a body that is not a JSON object with an
``entries`` array (400), and for an array of 0 or more than ``bulk_max_entries`` items
(422). A stopped service answers 503 (nothing written). The request takes one token of
the account's rate limit, like any request (the limit guards the service's CPU, and a bulk
write costs less of it per entry than single posts). Entry credits are paid per entry by
the worker, exactly as for operation 6, and held alike while the paying address is dry.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ledger.api.auth import Principal
from ledger.api.errors import (
    ApiError,
    BadRequest,
    InternalServerError,
    TemporarilyUnavailable,
    Unprocessable,
)
from ledger.api.http import writes
from ledger.api.http.deps import parse_json_object, validate
from ledger.api.http.schemas import EntryCreate
from ledger.api.outbox.intake import WriteOutcome, WriteRequest
from ledger.api.outbox.writer import WriterClosed
from ledger.api.services import Services

__all__ = ["BULK_PATH", "BULK_SUFFIX", "create_entries", "parse_items"]

_log = logging.getLogger(__name__)

#: The bulk route is the entry collection's path plus this segment.
BULK_SUFFIX = "/bulk"
#: The bulk route's full path (``fullmatch``), the chain ID its group 1.
BULK_PATH = re.compile(r"/v1/chains/([^/]+)/entries" + re.escape(BULK_SUFFIX))


async def create_entries(
    svc: Services, account: Principal, chain_id: str, raw: bytes
) -> dict[str, Any]:
    """The bulk write (module docstring): the 202 body ``{"items": [...]}``, one per entry.

    Raises:
        BadRequest: not JSON, not an object, no ``entries`` array.
        Unprocessable: 0 entries, or more than ``bulk_max_entries``.
        TemporarilyUnavailable: the service is stopping (nothing written).
    """
    items = parse_items(raw, max_entries=svc.settings.bulk_max_entries)
    answers: list[dict[str, Any] | None] = [None] * len(items)
    requests: list[WriteRequest] = []
    positions: list[int] = []
    for index, item in enumerate(items):
        try:
            body = _entry_create(item, index)
            requests.append(writes.entry_request(svc, account, chain_id, body))
        except ApiError as error:
            answers[index] = error.body()
        else:
            positions.append(index)
    try:
        results = await svc.writer.submit_many(requests)
    except WriterClosed as exc:
        raise TemporarilyUnavailable("The service is stopping; send the write again later") from exc
    for index, result in zip(positions, results, strict=True):
        answers[index] = _answer(result)
    return {"items": answers}


def parse_items(raw: bytes, *, max_entries: int) -> list[Any]:
    """The ``entries`` array of a bulk body, its items not yet checked.

    Raises:
        BadRequest: invalid JSON, not an object, ``entries`` missing or not an array.
        Unprocessable: fewer than 1 or more than ``max_entries`` items.
    """
    items = parse_json_object(raw).get("entries")
    if not isinstance(items, list):
        raise BadRequest("entries: must be an array of entry objects")
    if not 1 <= len(items) <= max_entries:
        raise Unprocessable(
            f"A bulk write carries 1 to {max_entries} entries; this one has {len(items)}"
        )
    return items


def _entry_create(item: Any, index: int) -> EntryCreate:
    if not isinstance(item, dict):
        raise BadRequest(f"entries[{index}]: must be a JSON object")
    return validate(item, EntryCreate, where=f"entries[{index}].")


def _answer(result: WriteOutcome | Exception) -> dict[str, Any]:
    if isinstance(result, WriteOutcome):
        return writes.entry_accepted(result)
    error = writes.write_error(result)
    if error is None:  # a real fault: logged, answered as the app's handler does
        _log.error("bulk write item failed", exc_info=result)
        error = InternalServerError("The request could not be handled")
    return error.body()
