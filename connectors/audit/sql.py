"""SQL building blocks of the audit store: its tables, queries and row conversions.

Shared by the repositories of ``connectors.audit`` and nothing else: no engine and no
clock here, only SQLAlchemy Core expressions over the tables of ``connectors.audit.models``
(portable to SQLite and PostgreSQL; what differs per backend is in
``connectors.audit.dialect``) and functions that run them on a connection the caller's
transaction owns.

Hex values are checked (``hex64``) and stored lowercase; times read back are made aware
UTC (``aware_utc``); ``IN (...)`` lists are cut into chunks of ``IN_CHUNK`` values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

from sqlalchemy import Table, select
from sqlalchemy.engine import Connection

from connectors.audit.models import AUDIT_METADATA
from connectors.audit.records import (
    STAGE_ORDER,
    AnchorRecord,
    NotarizationRow,
    ProofRecord,
    ReceiptRecord,
    Stage,
)
from connectors.receipt_raw import received_raw, stored_raw

__all__ = [
    "ANCHOR_EVENT_KEYS",
    "ANCHOR_REFRESHED",
    "IN_CHUNK",
    "anchor_record",
    "anchor_values",
    "anchored_rows",
    "anchors_table",
    "aware_utc",
    "chunks",
    "collections_table",
    "document_ids",
    "documents_table",
    "events_table",
    "hex64",
    "hex64_all",
    "ids_by_entry_hash",
    "member_query",
    "members_table",
    "notarization_row",
    "notarizations_table",
    "path_missing",
    "pending_rows",
    "proof_record",
    "receipt_values",
    "receipts_table",
    "row_query",
    "runs_table",
]

_HEX64 = re.compile(r"[0-9a-f]{64}")
IN_CHUNK = 500  # ids / hashes per IN (...) clause

_ROW_TIMES = ("created_at", "updated_at", "published_at", "multi_az_at", "ledger_at", "anchored_at")
_NOTARIZATION_FIELDS = tuple(f.name for f in fields(NotarizationRow))
_RECEIPT_FIELDS = tuple(f.name for f in fields(ReceiptRecord))

T = TypeVar("T")

documents_table: Table = AUDIT_METADATA.tables["documents"]
notarizations_table: Table = AUDIT_METADATA.tables["notarizations"]
events_table: Table = AUDIT_METADATA.tables["stage_events"]
receipts_table: Table = AUDIT_METADATA.tables["receipts"]
runs_table: Table = AUDIT_METADATA.tables["runs"]
anchors_table: Table = AUDIT_METADATA.tables["anchors"]
collections_table: Table = AUDIT_METADATA.tables["collections"]
members_table: Table = AUDIT_METADATA.tables["batch_members"]


def hex64(value: str) -> str:
    """``value`` lowercased, checked to be 64 hex characters (a SHA-256, an entry hash, a
    KeyMR or a chain id).

    Raises:
        ValueError: anything else.
    """
    lowered = value.lower()
    if not _HEX64.fullmatch(lowered):
        raise ValueError(f"expected 64 hex characters, got {value!r}")
    return lowered


def hex64_all(values: Iterable[str]) -> list[str]:
    """``hex64`` of each value, in order, checked all at once (a window's thousands of
    hashes cost ~10x less than one ``hex64`` each).

    Raises:
        ValueError: a value that is not 64 hex characters.
    """
    lowered = [v.lower() for v in values]
    joined = "".join(lowered)
    try:
        # bytes.fromhex skips whitespace: the decoded length catches a space.
        if set(map(len, lowered)) <= {64} and len(bytes.fromhex(joined)) * 2 == len(joined):
            return lowered
    except ValueError:
        pass
    return [hex64(v) for v in lowered]  # raises for the first that is not


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


@overload
def aware_utc(value: datetime) -> datetime: ...
@overload
def aware_utc(value: None) -> None: ...
def aware_utc(value: datetime | None) -> datetime | None:
    """Normalize to aware UTC (SQLite returns naive UTC values, PostgreSQL the session's zone)."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def document_ids(
    conn: Connection, source: str, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    """Ids of the documents of ``source`` with these ``(path, sha256 hex)`` keys (absent
    keys are left out). One lookup per key on UNIQUE(source, path, sha256): for the few
    keys of a batch's pseudo document (``documents`` has no index on ``sha256`` alone)."""
    d = documents_table.c
    found: dict[tuple[str, str], int] = {}
    for path, sha in sorted(set(keys)):
        query = select(d.id).where(d.source == source, d.path == path, d.sha256 == sha)
        doc_id = conn.scalar(query)
        if doc_id is not None:
            found[(path, sha)] = int(doc_id)
    return found


def ids_by_entry_hash(conn: Connection, hashes: set[str]) -> dict[int, str]:
    """Notarization id -> entry hash (hex) for the notarizations of these entry hashes."""
    n = notarizations_table.c
    found: dict[int, str] = {}
    for chunk in chunks(sorted(hashes), IN_CHUNK):
        for row in conn.execute(select(n.id, n.entry_hash).where(n.entry_hash.in_(chunk))):
            found[row.id] = row.entry_hash
    return found


def row_query() -> Any:
    """``SELECT`` of notarizations joined with their document's source, path and size: the
    columns of ``NotarizationRow`` (add ``where``, ``order_by`` and ``limit``)."""
    n, d = notarizations_table, documents_table
    return select(n, d.c.source, d.c.path, d.c.size_bytes).join(d, n.c.document_id == d.c.id)


def member_query() -> Any:
    """``SELECT`` of batch members as ``NotarizationRow`` columns: the batch notarization's
    columns with the member document's id, hash, source, path and size, the batch's root
    (``batch_root``), ``leaf_index`` and ``audit_path`` (add ``where``, ``order_by``; a NULL
    ``audit_path`` is filled in by ``connectors.audit.paths.BatchTrees``)."""
    n, d, m = notarizations_table, documents_table, members_table
    own = [c for c in n.c if c.name not in ("document_id", "sha256")]
    columns = [*own, m.c.document_id, m.c.sha256, n.c.sha256.label("batch_root")]
    columns += [d.c.source, d.c.path, d.c.size_bytes, m.c.leaf_index, m.c.audit_path]
    joined = m.join(n, m.c.batch_id == n.c.id).join(d, m.c.document_id == d.c.id)
    return select(*columns).select_from(joined)


def notarization_row(mapping: Mapping[Any, Any]) -> NotarizationRow:
    """A ``row_query`` or ``member_query`` result row as a ``NotarizationRow`` (times made
    aware UTC; the member columns absent from ``row_query`` keep their defaults)."""
    given = dict(mapping)  # one copy: a row mapping's ``in`` and ``[]`` cost ~1 us each
    values = {name: given[name] for name in _NOTARIZATION_FIELDS if name in given}
    for name in _ROW_TIMES:
        values[name] = aware_utc(values[name])
    if values.get("audit_path") is not None:
        values["audit_path"] = tuple(values["audit_path"])
    else:  # not a member, or a member whose path is recomputed (``path_missing``)
        values.pop("audit_path", None)
    return NotarizationRow(**values)


def path_missing(mapping: Mapping[Any, Any]) -> bool:
    """True for a ``member_query`` row read without its audit path (NULL: the path is
    recomputed from its batch's tree, ``connectors.audit.paths.BatchTrees``)."""
    return mapping.get("leaf_index") is not None and mapping.get("audit_path") is None


def receipt_values(notarization_id: int, record: ReceiptRecord) -> dict[str, Any]:
    """The ``receipts`` row of ``record`` for one notarization (hex checked).

    Raises:
        ValueError: a hash that is not 64 hex characters.
    """
    return {
        "notarization_id": notarization_id,
        "entry_hash": hex64(record.entry_hash),
        "merkle_branch": record.merkle_branch,
        "entry_block_keymr": hex64(record.entry_block_keymr),
        "directory_block_keymr": hex64(record.directory_block_keymr),
        "directory_block_height": record.directory_block_height,
        "raw": stored_raw(record.raw),  # its branch is the column's (connectors.receipt_raw)
        "verified_at": record.verified_at,
    }


#: Columns a second record of the same notarization's anchor overwrites.
ANCHOR_REFRESHED = (
    "dblock_height",
    "dblock_keymr",
    "anchor_block_hash",
    "transaction_id",
    "confirmations",
    "raw",
    "verified_at",
)
#: What an ``anchor`` stage event records of the anchor.
ANCHOR_EVENT_KEYS = ("dblock_height", "anchor_block_hash", "transaction_id", "confirmations")


def anchor_values(record: AnchorRecord) -> dict[str, Any]:
    """The ``anchors`` columns of ``record``, without the notarization id (hex checked).

    Raises:
        ValueError: a hash that is not 64 hex characters, or a negative number.
    """
    if record.dblock_height < 0 or record.confirmations < 0:
        raise ValueError(f"negative height or confirmations in {record!r}")
    return {
        "dblock_height": int(record.dblock_height),
        "dblock_keymr": hex64(record.dblock_keymr),
        "anchor_block_hash": hex64(record.anchor_block_hash),
        "transaction_id": hex64(record.transaction_id),
        "confirmations": int(record.confirmations),
        "raw": dict(record.raw),
        "verified_at": record.verified_at,
    }


def anchored_rows(
    conn: Connection, by_height: Mapping[int, Mapping[str, Any]], collection: str | None
) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """Rows at ``ledger``/``anchor`` in the anchored blocks: (id -> stage, anchor values)."""
    n = notarizations_table.c
    stages: dict[int, str] = {}
    values: list[dict[str, Any]] = []
    for chunk in chunks(sorted(by_height), IN_CHUNK):
        query = select(n.id, n.stage, n.dblock_height, n.dblock_keymr).where(
            n.stage.in_(["ledger", "anchor"]), n.dblock_height.in_(chunk)
        )
        if collection is not None:
            query = query.where(n.collection == collection)
        for row in conn.execute(query.order_by(n.id)):
            anchor = by_height[row.dblock_height]
            if row.dblock_keymr == anchor["dblock_keymr"]:
                stages[row.id] = row.stage
                values.append({"notarization_id": row.id, **anchor})
    return stages, values


def anchor_record(mapping: Mapping[Any, Any]) -> AnchorRecord:
    """An ``anchors`` row as an ``AnchorRecord`` (``verified_at`` aware UTC)."""
    values = {f.name: mapping[f.name] for f in fields(AnchorRecord)}
    values["verified_at"] = aware_utc(values["verified_at"])
    return AnchorRecord(**values)


def proof_record(mapping: Mapping[Any, Any]) -> ProofRecord:
    """A ``row_query`` row outer-joined with ``receipts`` (columns prefixed ``r_``) as a
    ``ProofRecord``; ``receipt`` is ``None`` when the join found none."""
    receipt = None
    if mapping["r_id"] is not None:
        values = {name: mapping[f"r_{name}"] for name in _RECEIPT_FIELDS}
        values["verified_at"] = aware_utc(values["verified_at"])
        values["raw"] = received_raw(values["raw"], values["merkle_branch"])
        receipt = ReceiptRecord(**values)
    return ProofRecord(notarization_row(mapping), receipt)


def pending_rows(
    conn: Connection,
    query: Any,
    stage_below: Stage,
    stage_from: Stage,
    collection: str | None,
    limit: int,
    after_id: int,
) -> list[Any]:
    """The rows of ``query`` (a ``SELECT`` over notarizations with an ``id`` column)
    narrowed to those of ``Notarizations.pending``: stage in ``[stage_from, stage_below)``, ids
    above ``after_id``, of ``collection`` if given, by id, at most ``limit``.

    One query per stage, merged here: with ``stage IN (...)`` SQLite walks the
    ``(stage, collection)`` index once per stage and sorts every row above ``after_id``
    for each page (12 ms a page of 250 with 100,000 rows waiting, O(n^2) over a sweep);
    with ``stage = ?`` the index yields the rows in id order and stops at ``limit``.
    """
    n = notarizations_table.c
    start, end = STAGE_ORDER.index(stage_from), STAGE_ORDER.index(stage_below)
    found: list[Any] = []
    for stage in STAGE_ORDER[start:end]:
        one = query.where(n.stage == stage, n.id > after_id)
        if collection is not None:
            one = one.where(n.collection == collection)
        found += conn.execute(one.order_by(n.id).limit(limit)).all()
    if end - start > 1:
        found.sort(key=lambda r: int(r.id))
    return found[:limit]
