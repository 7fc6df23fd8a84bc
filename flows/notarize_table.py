"""The ``notarize_table`` flow: read new and changed rows by watermark, hash, record, publish.

Orchestration only. Pages of rows are read one after the other (``read_table_batch``,
retried when the database is unreachable); each page is hashed by a ``hash-rows`` task run
on the task runner chosen by ``PipelineSettings.task_runner`` (threads, or a Dask cluster:
then row values travel to the cluster's workers), while the next page is read. Only keys,
hashes and sizes are recorded; row values never reach the ledger (what does is set by the
collection's publish mode: ``flows.pipeline.Recorder``). Pages are
recorded in read order; after a page is recorded in the audit store its position is saved
in ``table_watermarks``, so the next run continues after it; a run killed before that
re-reads the page and skips its rows as already notarized. In the ``aggregate`` mode a
position is saved only once every row before it is in a recorded batch (rows recorded but
still waiting for their batch are read again by the next run if this one dies). Then the
shared steps publish every pending notarization of the collection (including those an
interrupted run left) and wait for the ``ledger`` stage.

A changed row (same key, new values) has a new hash, so it is notarized again; its key is
the same ``path``. A row that did not change is not read again (its watermark is behind).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from pydantic import SecretStr

from connectors.audit import CollectionRecord, DocumentIn, RunStatus
from connectors.table_source import (
    Position,
    RowPage,
    SourceConfigError,
    SourceUnreachable,
    TableSource,
)
from connectors.watermark_store import WatermarkStore
from flows.collector import fewer_collections
from flows.pipeline import (
    Recorder,
    Services,
    hash_task_runner,
    ledger_followed,
    open_collection,
    open_services,
    publish_pending,
    wait_ledger,
)
from flows.run_heartbeat import RunHeartbeat
from flows.run_summary import RunSummary, finish_counts, publish_artifact
from flows.settings import PipelineSettings
from tasks.publish import ensure_collection_chain
from tasks.row_hashing import hash_row
from tasks.steps import ResultList

MAX_COLLECTION_CHARS = 255
#: Pages hashed (or waiting to be recorded) at once: bounds memory to a few pages of rows.
PAGES_IN_FLIGHT = 4

Rows = Sequence[tuple[dict[str, Any], dict[str, Any]]]


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
def read_table_batch(source: TableSource, after: Position | None, *, limit: int) -> RowPage:
    """Read the next page of at most ``limit`` rows after ``after``. Read-only, so safe to
    retry; retried only when the database could not be reached."""
    return source.read_page(after, limit=limit)


@task(name="hash-rows", cache_policy=NO_CACHE)
def hash_rows(rows: Rows) -> ResultList[DocumentIn]:
    """Each ``(key, row)`` as a document: key as ``path``, SHA-256 and size of the row's
    canonical JSON (``tasks.row_hashing.hash_row``), as a ``tasks.steps.ResultList``.

    Raises:
        UnsupportedValue: a value has no canonical JSON form (not retried: it would fail
            again).
    """
    return ResultList([hash_row(key, row) for key, row in rows])


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
        ``RunSummary.as_dict()`` (``documents_seen`` counts rows read, ``bytes_hashed`` the
        bytes of their canonical JSON) plus ``"watermark"``: the saved position as JSON, or
        None.

    Raises:
        SourceConfigError: bad URL, table, query or column; collection name too long.
        SourceUnreachable: the source database could not be reached.
        TableSourceError: reading a page failed otherwise.
        UnsupportedValue: a column value with no canonical JSON form (read it through a
            ``query`` that casts or leaves out the column).
        ConnectorError: the publishing API or the node could not be reached.
        TaskRunnerUnavailable: ``task_runner`` is ``dask`` and ``prefect-dask`` is missing.
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
        with open_services(settings) as services, fewer_collections():
            record = open_collection(services, name)
            summary = RunSummary(source.name, name, record.chain_id)
            last = _run_recorded(summary, services, source, record, wait=wait_for_ledger_stage)
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
    summary: RunSummary,
    services: Services,
    source: TableSource,
    collection: CollectionRecord,
    *,
    wait: bool,
) -> Position | None:
    """``_run`` between a run record's start and finish (status ``failed`` if it raises)."""
    parameters = {
        "source": source.name,
        "collection": summary.collection,
        "watermark": source.watermark_column,
        "key_columns": list(source.key_columns),
    }
    settings = services.settings
    run_id = services.store.runs.start(
        "notarize_table", parameters=parameters, stale_after_s=settings.run_stale_s
    )
    status: RunStatus = "failed"
    beat = RunHeartbeat(services.store, run_id, interval_s=settings.run_heartbeat_s)
    try:
        last = _run(summary, services, source, collection, wait=wait)
        status = "completed"
        return last
    finally:
        beat.stop()
        finish_counts(summary, services.store)
        services.store.runs.finish(run_id, counts=summary.as_dict(), status=status)


def _run(
    summary: RunSummary,
    services: Services,
    source: TableSource,
    collection: CollectionRecord,
    *,
    wait: bool,
) -> Position | None:
    summary.timed(
        "chain",
        lambda: ensure_collection_chain(
            services.api, collection, on_created=summary.add_chain_created
        ),
    )
    recorder = Recorder(summary, services, collection, source=source.name)
    with ledger_followed(summary, services, collection, enabled=wait):
        last = summary.timed("read", lambda: _read_and_record(summary, services, source, recorder))
        summary.timed("publish", lambda: publish_pending(summary, services, summary.collection))
    if wait:
        summary.timed(
            "ledger", lambda: wait_ledger(summary, services, collection=summary.collection)
        )
    return last


def _read_and_record(
    summary: RunSummary, services: Services, source: TableSource, recorder: Recorder
) -> Position | None:
    """Read pages after the saved position and hash them on the task runner; record each
    page in read order (``recorder``: published as it goes), then save its position once
    none of its rows waits for a batch. Returns the last position saved."""
    log = get_run_logger()
    marks = WatermarkStore(services.store.engine)
    name, collection = source.name, summary.collection
    wm_column, keys = source.watermark_column, source.key_columns
    after = marks.load(name, collection, watermark_column=wm_column, key_columns=keys)
    log.info("reading %s after %s", source.name, after.to_json() if after else "the start")
    limit = services.settings.batch_size
    in_flight: deque[tuple[PrefectFuture[ResultList[DocumentIn]], Position]] = deque()
    unsaved = 0  # rows recorded since the last saved position
    waiting: Position | None = None  # the last position recorded

    def save(last: Position) -> None:
        nonlocal after, unsaved
        marks.save(
            name, collection, last, watermark_column=wm_column, key_columns=keys, rows_read=unsaved
        )
        after, unsaved = last, 0

    def record_oldest() -> None:
        nonlocal unsaved, waiting
        future, last = in_flight.popleft()
        docs = future.result().items
        summary.documents_seen += len(docs)
        summary.bytes_hashed += sum(d.size_bytes for d in docs)
        recorder.add(docs)
        unsaved += len(docs)
        waiting = last
        if recorder.settled:
            save(last)

    with hash_task_runner(services.settings) as runner:
        position = after
        while True:
            page = read_table_batch(source, position, limit=limit)
            if page.last is None:
                break
            in_flight.append((runner.submit(hash_rows, {"rows": page.rows}), page.last))
            position = page.last
            if len(in_flight) >= PAGES_IN_FLIGHT:
                record_oldest()
            if len(page.rows) < limit:
                break
        while in_flight:
            record_oldest()
    recorder.flush()
    if waiting is not None and waiting != after:
        save(waiting)
    log.info("read %d rows of %s", summary.documents_seen, source.name)
    return after
