"""The ``notarize_table`` flow: read new and changed rows by watermark, hash, record, publish.

Orchestration only. Each page of rows is one task run (``read_table_batch``: read the page
and hash its rows; row values never leave the task, only keys, hashes and sizes). After a
page is recorded in the audit store its position is saved in ``table_watermarks``, so the
next run continues after it; a run killed before that re-reads the page and skips its rows
as already notarized. Then the shared steps publish every pending notarization of the
collection (including those an interrupted run left) and wait for the ``ledger`` stage.

A changed row (same key, new values) has a new hash, so it is notarized again; its key is
the same ``path``. A row that did not change is not read again (its watermark is behind).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from pydantic import SecretStr

from connectors.audit_store import DocumentIn, RunStatus
from connectors.table_source import (
    Position,
    SourceConfigError,
    SourceUnreachable,
    TableSource,
    WatermarkStore,
)
from flows.pipeline import (
    RunSummary,
    Services,
    finish_counts,
    open_services,
    publish_artifact,
    publish_pending,
    record_batch,
    wait_ledger,
)
from flows.settings import PipelineSettings
from tasks.documents import collection_chain_id
from tasks.publish import ensure_collection_chain
from tasks.row_hashing import hash_row

MAX_COLLECTION_CHARS = 255


@dataclass(frozen=True)
class HashedBatch:
    """One page of rows as documents (key as ``path``), with the position of its last row."""

    docs: list[DocumentIn]
    last: Position | None


def _retry_when_unreachable(_task: Any, _task_run: Any, state: Any) -> bool:
    """Retry a page read only when the database was unreachable (not for a bad value)."""
    return isinstance(state.data, SourceUnreachable)


@task(
    name="read-table-batch",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=[1, 4],
    retry_condition_fn=_retry_when_unreachable,
)
def read_table_batch(source: TableSource, after: Position | None, *, limit: int) -> HashedBatch:
    """Read the next page of at most ``limit`` rows after ``after`` and hash each row
    (``tasks.row_hashing.hash_row``). Read-only, so safe to retry; retried only when the
    database could not be reached."""
    page = source.read_page(after, limit=limit)
    return HashedBatch([hash_row(key, row) for key, row in page.rows], page.last)


@flow(name="notarize-table", validate_parameters=False)
def notarize_table(
    url: str | SecretStr | None = None,
    table: str | None = None,
    query: str | None = None,
    watermark: str | None = None,
    key_columns: Sequence[str] | None = None,
    collection: str | None = None,
    settings: PipelineSettings | None = None,
    wait_for_ledger_stage: bool = True,
) -> dict[str, Any]:
    """Notarize the rows of ``table`` (or ``query``) added or changed since the last run.

    Args:
        url: SQLAlchemy URL of the source database; pass a ``SecretStr`` when it holds a
            password so it is not stored with the flow run's parameters, or ``None`` to use
            ``settings.table_url`` (``NOTARY_TABLE_URL``; what scheduled deployments do).
        table: ``name`` or ``schema.name`` (exactly one of ``table`` and ``query``).
        query: a SELECT to read instead of a table (``key_columns`` required).
        watermark: increasing column (an id, or an updated-at timestamp to catch changed
            rows); default the table's single-column primary key.
        key_columns: the columns recorded as each row's key; default the primary key.
        collection: collection name (one chain); default the source name
            (``table:<url without password>#<table>``).
        settings: pipeline settings (services, audit store, ``batch_size`` rows per page).
        wait_for_ledger_stage: wait (with retries and back-off) until every entry is in a
            directory block and its receipt is verified and stored.

    Returns:
        ``RunSummary.as_dict()`` (``files_seen`` counts rows read, ``bytes_hashed`` the bytes
        of their canonical JSON) plus ``"watermark"``: the saved position as JSON, or None.

    Raises:
        SourceConfigError: bad URL, table, query or column; collection name too long.
        SourceUnreachable: the source database could not be reached.
        TableSourceError: reading a page failed otherwise.
        UnsupportedValue: a column value with no canonical JSON form (read it through a
            ``query`` that casts or leaves out the column).
        ConnectorError: the publishing API or the node could not be reached.
    """
    settings = settings or PipelineSettings()
    url = url if url is not None else settings.table_url
    if url is None:
        raise SourceConfigError("no table URL: pass one or set NOTARY_TABLE_URL")
    raw_url = url.get_secret_value() if isinstance(url, SecretStr) else url
    with TableSource.connect(
        raw_url, table=table, query=query, watermark=watermark, key_columns=key_columns
    ) as source:
        name = _collection_name(collection, source)
        summary = RunSummary(source.name, name, collection_chain_id(name))
        with open_services(settings) as services:
            last = _run_recorded(summary, services, source, wait=wait_for_ledger_stage)
    publish_artifact(summary, key="notarize-table-summary", title=f"Notarization of {source.name}")
    return summary.as_dict() | {"watermark": last.to_json() if last is not None else None}


def _collection_name(collection: str | None, source: TableSource) -> str:
    name = collection or source.name
    if len(name) > MAX_COLLECTION_CHARS:
        raise SourceConfigError(
            f"collection name {name[:60]!r}... is longer than {MAX_COLLECTION_CHARS} "
            "characters; give a shorter one (--collection)"
        )
    return name


def _run_recorded(
    summary: RunSummary, services: Services, source: TableSource, *, wait: bool
) -> Position | None:
    """``_run`` between a run record's start and finish (status ``failed`` if it raises)."""
    parameters = {
        "source": source.name,
        "collection": summary.collection,
        "watermark": source.watermark_column,
        "key_columns": list(source.key_columns),
    }
    run_id = services.store.start_run("notarize_table", parameters=parameters)
    status: RunStatus = "failed"
    try:
        last = _run(summary, services, source, wait=wait)
        status = "completed"
        return last
    finally:
        finish_counts(summary, services.store)
        services.store.finish_run(run_id, counts=summary.as_dict(), status=status)


def _run(
    summary: RunSummary, services: Services, source: TableSource, *, wait: bool
) -> Position | None:
    summary.timed("chain", lambda: ensure_collection_chain(services.api, summary.collection))
    new_ids, last = summary.timed("read", lambda: _read_and_record(summary, services, source))
    summary.timed("publish", lambda: publish_pending(summary, services, frozenset(new_ids)))
    if wait:
        summary.timed(
            "ledger", lambda: wait_ledger(summary, services, collection=summary.collection)
        )
    return last


def _read_and_record(
    summary: RunSummary, services: Services, source: TableSource
) -> tuple[list[int], Position | None]:
    """Read pages after the saved position; record each, then save its position."""
    log = get_run_logger()
    marks = WatermarkStore(services.store.engine)
    wm_column, keys = source.watermark_column, source.key_columns
    after = marks.load(
        source.name, summary.collection, watermark_column=wm_column, key_columns=keys
    )
    log.info("reading %s after %s", source.name, after.to_json() if after else "the start")
    limit = services.settings.batch_size
    new_ids: list[int] = []
    while True:
        batch = read_table_batch(source, after, limit=limit)
        if batch.last is None:
            break
        summary.files_seen += len(batch.docs)
        summary.bytes_hashed += sum(d.size_bytes for d in batch.docs)
        new_ids += record_batch(summary, services, source=source.name, docs=batch.docs)
        marks.save(
            source.name,
            summary.collection,
            batch.last,
            watermark_column=wm_column,
            key_columns=keys,
            rows_read=len(batch.docs),
        )
        after = batch.last
        if len(batch.docs) < limit:
            break
    log.info("read %d rows of %s", summary.files_seen, source.name)
    return new_ids, after
