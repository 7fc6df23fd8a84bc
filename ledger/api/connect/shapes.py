"""Response shapes of the hosted Harmony Connect service, from the API's rows (pure).

The hosted service (and its official SDKs) differ from the spec's plain shapes:

* a resource is wrapped: ``{"data": {...}}``; a list is ``{"data": [...], "offset",
  "limit", "count"}`` (the spec: ``{"items": [...]}``); both searches answer such a list,
  empty when nothing matches (the spec: the oldest match, or 404);
* links are ``href`` strings relative to the host (``/v1/chains/{id}``), and an entry
  names its chain as ``{"chain_id", "href"}``;
* stages are named ``replicated``, ``factom`` and ``anchored`` (the spec's ``multi_az``,
  ``ledger`` and ``anchor``), in answers, ``callback_stages`` and the ``stages`` filter;
* a recorded chain or entry carries ``dblock`` ``{"keymr", "height"}`` and ``eblock``
  ``{"keymr"}``, ``null`` before it is in a directory block.

A write given up has stage ``failed`` in both modes (the hosted service had no name for
it: it never gave a write up visibly), and its chain or entry carries the spec mode's
``failure`` object, ``{"reason", "failed_at", "attempts"}``, with ``failed_at`` in this
mode's time format. ``failed`` is also accepted by the ``stages`` filter.

``created_at`` is the time the API accepted the write (ISO 8601, UTC), also before the
``factom`` stage (the hosted service left it ``null`` until then). Every ``external_ids``
value and every ``content`` stays Base64, as the SDKs decode them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from ledger.api.encoding import to_base64
from ledger.api.errors import BadRequest
from ledger.api.models import Chain, EntryRow, Stage
from ledger.api.outbox.failures import FailureInfo

__all__ = [
    "CONNECT_STAGES",
    "chain_detail",
    "chain_href",
    "chain_summary",
    "connect_stage",
    "dblock_ref",
    "eblock_ref",
    "entry_detail",
    "entry_href",
    "entry_search_item",
    "entry_summary",
    "failure_ref",
    "iso_time",
    "page",
    "spec_stages",
]

#: Our stage -> the hosted service's name of it.
CONNECT_STAGES: dict[str, str] = {
    Stage.ACCEPTED.value: "replicated",
    Stage.MULTI_AZ.value: "replicated",
    Stage.LEDGER.value: "factom",
    Stage.ANCHOR.value: "anchored",
    Stage.FAILED.value: "failed",
}
_FROM_CONNECT = {
    "replicated": Stage.MULTI_AZ.value,
    "factom": Stage.LEDGER.value,
    "anchored": Stage.ANCHOR.value,
}
_BASE = "/v1"


def connect_stage(stage: str) -> str:
    """The hosted service's name of our ``stage``."""
    return CONNECT_STAGES.get(stage, stage)


def spec_stages(names: Iterable[str], field: str) -> list[str]:
    """Stage names as sent by a Connect client -> ours (the spec's names are accepted too).

    Raises:
        BadRequest: a name that is neither.
    """
    stages = []
    for name in names:
        stage = _FROM_CONNECT.get(name, name)
        if stage not in CONNECT_STAGES or stage == Stage.ACCEPTED.value:
            raise BadRequest(f"{field}: unknown stage {name[:40]!r}")
        stages.append(stage)
    return stages


def iso_time(seconds: float) -> str:
    """Unix seconds as ISO 8601 UTC with microseconds (``2019-03-04T04:30:00.000000Z``)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def chain_href(chain_id: str) -> str:
    return f"{_BASE}/chains/{chain_id}"


def entry_href(chain_id: str, entry_hash: str) -> str:
    return f"{chain_href(chain_id)}/entries/{entry_hash}"


def dblock_ref(row: EntryRow) -> dict[str, Any] | None:
    """``{"keymr", "height"}`` of the directory block holding ``row``, ``None`` before."""
    if row.dblock_keymr is None or row.dblock_height is None:
        return None
    return {"keymr": row.dblock_keymr, "height": row.dblock_height}


def eblock_ref(keymr: str | None) -> dict[str, Any] | None:
    """``{"keymr"}`` of the entry block holding an entry, ``None`` when not known."""
    return None if keymr is None else {"keymr": keymr}


def page(data: Sequence[Any], *, offset: int, limit: int, count: int) -> dict[str, Any]:
    """A list answer: ``{"data", "offset", "limit", "count"}``."""
    return {"data": list(data), "offset": offset, "limit": limit, "count": count}


def chain_summary(chain: Chain, first: EntryRow) -> dict[str, Any]:
    """An item of the chain list and of the chain search."""
    return {
        "chain_id": chain.chain_id,
        "external_ids": list(chain.external_ids),
        "href": chain_href(chain.chain_id),
        "stage": connect_stage(first.stage),
        "created_at": iso_time(first.created_at),
    }


def failure_ref(failure: FailureInfo | None) -> dict[str, Any]:
    """``{"failure": {...}}`` for a write given up, ``{}`` otherwise (module docstring)."""
    if failure is None:
        return {}
    at = None if failure.failed_at is None else iso_time(failure.failed_at)
    return {"failure": {"reason": failure.reason, "failed_at": at, "attempts": failure.attempts}}


def chain_detail(
    chain: Chain,
    first: EntryRow,
    *,
    eblock_keymr: str | None,
    failure: FailureInfo | None = None,
) -> dict[str, Any]:
    """``GET /v1/chains/{id}``: the chain with its first entry's content (``failure``: the
    first entry's, when it was given up)."""
    return {
        "data": {
            "chain_id": chain.chain_id,
            "external_ids": list(chain.external_ids),
            "content": to_base64(bytes(first.content)),
            "stage": connect_stage(first.stage),
            "entries": {"href": f"{chain_href(chain.chain_id)}/entries"},
            "eblock": eblock_ref(eblock_keymr),
            "dblock": dblock_ref(first),
            "created_at": iso_time(first.created_at),
            **failure_ref(failure),
        }
    }


def _chain_ref(chain_id: str) -> dict[str, str]:
    return {"chain_id": chain_id, "href": chain_href(chain_id)}


def entry_summary(row: EntryRow) -> dict[str, Any]:
    """An item of the entry list."""
    return {
        "entry_hash": row.entry_hash,
        "chain": _chain_ref(row.chain_id),
        "created_at": iso_time(row.created_at),
        "href": entry_href(row.chain_id, row.entry_hash),
        "stage": connect_stage(row.stage),
    }


def entry_search_item(row: EntryRow) -> dict[str, Any]:
    """An item of the entry search."""
    return {
        "entry_hash": row.entry_hash,
        "external_ids": list(row.external_ids),
        "href": entry_href(row.chain_id, row.entry_hash),
        "stage": connect_stage(row.stage),
    }


def entry_detail(
    row: EntryRow, *, eblock_keymr: str | None, failure: FailureInfo | None = None
) -> dict[str, Any]:
    """An entry (get, first, last); ``failure`` when it was given up."""
    return {
        "data": {
            "entry_hash": row.entry_hash,
            "chain": _chain_ref(row.chain_id),
            "created_at": iso_time(row.created_at),
            "external_ids": list(row.external_ids),
            "content": to_base64(bytes(row.content)),
            "stage": connect_stage(row.stage),
            "dblock": dblock_ref(row),
            "eblock": eblock_ref(eblock_keymr),
            **failure_ref(failure),
        }
    }
