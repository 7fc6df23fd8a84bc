"""Request and response bodies of the REST interface (docs/rest-api.md §3 (Resources and
their fields)).

Every ``external_ids`` value and every ``content`` is Base64 on the wire, both ways.
Chain and Entry responses carry extra fields beyond the original interface
(docs/rest-api.md §11): ``stage``, ``created_at`` (ISO 8601 UTC), ``dblock_keymr`` and
``dblock_height`` (``null`` until the entry is in a directory block), and, only on a write
given up (stage ``failed``), ``failure``: ``{"reason", "failed_at", "attempts"}``. List
responses add ``count`` (total), ``offset`` and ``limit``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AllInfo",
    "ChainAccepted",
    "ChainCreate",
    "ChainLink",
    "ChainList",
    "ChainPublic",
    "EntryAccepted",
    "EntryBatchAccepted",
    "EntryBatchCreate",
    "EntryCreate",
    "EntryLink",
    "EntryList",
    "EntryPublic",
    "ExternalIds",
    "FailurePublic",
]

StageName = Literal["multi_az", "ledger", "anchor"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class EntryCreate(_Request):
    """Body of operation 6 (and base of ChainCreate); every field optional.

    Absent or ``null`` ``external_ids``/``content`` mean empty. ``callback_stages`` absent
    or ``null`` with a ``callback_url`` means ``["ledger", "anchor"]``; ``[]`` means none.
    """

    external_ids: list[str] | None = None
    content: str | None = None
    callback_url: str | None = None
    callback_stages: list[StageName] | None = None


class ChainCreate(EntryCreate):
    """Body of operation 2: ``external_ids`` and ``content`` make the chain's first entry.

    Without external IDs (absent, ``null`` or ``[]``) the service adds one, a random UUID
    as text, so that every such request creates a new chain (its ID is in the answer).
    """


class ExternalIds(_Request):
    """Body of operations 4 and 10: values to match (Base64), at least one."""

    external_ids: list[str] = Field(min_length=1)


class FailurePublic(BaseModel):
    """Why a write was given up (stage ``failed``; docs/rest-api.md §3).

    ``failed_at`` is ISO 8601 UTC (``null`` for a write given up before failures were
    recorded); ``attempts`` counts the submissions answered with an error.
    """

    reason: str
    failed_at: str | None
    attempts: int


class ChainLinks(BaseModel):
    entries: str
    first: str
    last: str


class ChainPublic(BaseModel):
    """A chain (operations 4 and 5); stage fields are those of its first entry."""

    chain_id: str
    external_ids: list[str]
    links: ChainLinks
    stage: str
    created_at: str
    dblock_keymr: str | None = None
    dblock_height: int | None = None
    failure: FailurePublic | None = None


class ChainLinkLinks(BaseModel):
    chain: str


class ChainLink(BaseModel):
    chain_id: str
    links: ChainLinkLinks


class ChainList(BaseModel):
    items: list[ChainLink]
    count: int
    offset: int
    limit: int


class EntryLinks(BaseModel):
    chain: str


class EntryPublic(BaseModel):
    """An entry (operations 8 to 11)."""

    entry_hash: str
    chain_id: str
    external_ids: list[str]
    content: str
    links: EntryLinks
    stage: str
    created_at: str
    dblock_keymr: str | None = None
    dblock_height: int | None = None
    failure: FailurePublic | None = None


class EntryLinkLinks(BaseModel):
    entry: str


class EntryLink(BaseModel):
    entry_hash: str
    links: EntryLinkLinks


class EntryList(BaseModel):
    items: list[EntryLink]
    count: int
    offset: int
    limit: int


class AllInfoLinks(BaseModel):
    chains: str


class AllInfo(BaseModel):
    """Answer of operation 1; ``sandbox`` (extra) tells whether this is the sandbox."""

    api_version: str
    links: AllInfoLinks
    sandbox: bool = False


class ChainAccepted(BaseModel):
    """Answer of operation 2 (HTTP 202): ``chain_id`` plus the first entry's hash and stage."""

    chain_id: str
    entry_hash: str
    stage: str


class EntryAccepted(BaseModel):
    """Answer of operation 6 (HTTP 202): ``entry_hash`` plus ``chain_id`` and stage."""

    entry_hash: str
    chain_id: str
    stage: str


class EntryBatchCreate(_Request):
    """Body of the bulk write (an extension, ``ledger.api.http.bulk``): the entries of one chain,
    each an operation 6 body, 1 to ``bulk_max_entries`` of them."""

    entries: list[EntryCreate] = Field(min_length=1)


class ErrorDetail(BaseModel):
    code: int
    name: str
    message: str


class EntryRefused(BaseModel):
    """One entry of a bulk write that was not written: the error operation 6 would answer."""

    error: ErrorDetail


class EntryBatchAccepted(BaseModel):
    """Answer of the bulk write (HTTP 202): one item per entry sent, in order."""

    items: list[EntryAccepted | EntryRefused]
