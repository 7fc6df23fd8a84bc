"""The ``notarize_folder`` flow: scan, hash, record, publish, wait for ``ledger``, verify.

Orchestration only; the steps are batch tasks (``tasks.steps``) and the shared pipeline
steps (``flows.pipeline``). Hash batches run on the task runner chosen by
``PipelineSettings.task_runner`` (threads, or a Dask cluster whose workers see the folder
at the same path); recording, publishing and waiting stay in the flow's process; all of it
streams (``notarize_folder``). Re-running it on the same folder publishes nothing new:
documents whose hash the collection's chain already holds are skipped, rows an interrupted
run left behind are finished, and documents it recorded but did not batch are batched.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.futures import PrefectFuture
from prefect.utilities.annotations import quote

from connectors.audit import CollectionRecord, RunStatus
from connectors.folder_source import ScanEntry, scan, source_name
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
    windows,
)
from flows.refused_list import RefusedList, refused_list_path
from flows.run_heartbeat import RunHeartbeat
from flows.run_summary import RunSummary, finish_counts, publish_artifact
from flows.settings import PipelineSettings
from tasks.hashing import HashResult
from tasks.publish import ensure_collection_chain
from tasks.scan_process import scan_in_child
from tasks.steps import ResultList, hash_batch

#: Hash windows submitted to the task runner and not yet recorded: enough to keep the
#: runner busy while the flow records and publishes, few enough to bound memory.
WINDOWS_IN_FLIGHT = 4


@flow(name="notarize-folder", validate_parameters=False)
def notarize_folder(
    folder: str,
    collection: str | None = None,
    settings: PipelineSettings | None = None,
    wait_for_ledger_stage: bool = True,
) -> dict[str, Any]:
    """Notarize every regular file under ``folder`` into the chain of ``collection``.

    The scan is walked lazily in windows of ``batch_size`` files; at most
    ``WINDOWS_IN_FLIGHT`` windows are hashed at once on the task runner, each is recorded
    as it completes and published while the scan goes on (per the collection's publish
    mode: ``flows.pipeline.Recorder``), so memory does not grow with the folder.

    Args:
        folder: the folder to notarize (recursive; symlinks are not followed; hidden,
            ``.part``, ``.swp``, ``~$*`` and ``.tmp`` files are ignored).
        collection: collection name; default the folder's absolute path (never published
            in the private modes: the chain is named by the collection's identifier).
        settings: pipeline settings (services, audit store, batch sizes, publish mode).
        wait_for_ledger_stage: wait (with retries and back-off) until every entry is in a
            directory block and its receipt is verified and stored.

    Returns:
        ``RunSummary.as_dict()`` (``documents_seen`` counts the files found).

    Raises:
        TaskRunnerUnavailable: ``task_runner`` is ``dask`` and ``prefect-dask`` is missing.
        CollectionModeError: the publish mode would switch the collection between clear
            and private.
        ConnectorError: the publishing API or the node could not be reached.
    """
    settings = settings or PipelineSettings()
    root = Path(folder).resolve()
    name = collection or str(root)
    with open_services(settings) as services, fewer_collections():
        record = open_collection(services, name)
        summary = RunSummary(str(root), name, record.chain_id)
        run_id = services.store.runs.start(
            "notarize_folder",
            parameters={"folder": str(root), "collection": name},
            stale_after_s=settings.run_stale_s,
        )
        status: RunStatus = "failed"
        refused = RefusedList(refused_list_path(settings.data_dir, run_id))
        beat = RunHeartbeat(services.store, run_id, interval_s=settings.run_heartbeat_s)
        try:
            with refused:
                _run(summary, services, record, refused, root=root, wait=wait_for_ledger_stage)
            status = "completed"
        finally:
            beat.stop()
            if refused.written is not None:
                summary.refused_list = str(refused.written)
            finish_counts(summary, services.store)
            services.store.runs.finish(run_id, counts=summary.as_dict(), status=status)
    publish_artifact(summary, key="notarize-folder-summary", title=f"Notarization of {root}")
    return summary.as_dict()


def _run(
    summary: RunSummary,
    services: Services,
    collection: CollectionRecord,
    refused_list: RefusedList,
    *,
    root: Path,
    wait: bool,
) -> None:
    summary.timed(
        "chain",
        lambda: ensure_collection_chain(
            services.api, collection, on_created=summary.add_chain_created
        ),
    )
    recorder = Recorder(summary, services, collection, source=source_name(root))
    with ledger_followed(summary, services, collection, enabled=wait):
        summary.timed("hash", lambda: _stream(summary, services, recorder, root, refused_list))
        get_run_logger().info("found %d files under %s", summary.documents_seen, root)
        summary.timed("publish", lambda: publish_pending(summary, services, summary.collection))
    if wait:
        summary.timed(
            "ledger", lambda: wait_ledger(summary, services, collection=summary.collection)
        )


def _stream(
    summary: RunSummary,
    services: Services,
    recorder: Recorder,
    root: Path,
    refused_list: RefusedList,
) -> None:
    """Scan, hash, record and publish window by window (``stage_seconds["hash"]`` covers
    the scan and hashing, and the publishing done meanwhile, also counted in ``publish``).
    Refused entries are counted and listed in ``refused_list``, not in the run's notes."""

    def refused(relative_path: str, reason: str) -> None:
        summary.refused += 1
        refused_list.add(relative_path, reason)  # display_path made it printable

    settings = services.settings
    in_flight: deque[tuple[list[ScanEntry], PrefectFuture[ResultList[HashResult]]]] = deque()

    def record_oldest() -> None:
        window, future = in_flight.popleft()
        recorder.add(summary.add_hashed(window, future.result().items))

    with hash_task_runner(settings) as runner:
        # The walk runs in a child process (another core) where small files are hashed in
        # one too (``hash_small_files="process"``), else on this thread.
        walk = scan_in_child if settings.hash_small_files == "process" else scan
        for window in windows(walk(root, on_skip=refused), settings.batch_size):
            summary.documents_seen += len(window)
            # Quoted, Prefect does not walk every ScanEntry looking for futures (~0.17 ms
            # each); a Dask worker is sent the entries as they are (it gets tuples else).
            entries = quote(window) if settings.task_runner == "threads" else window
            params = {
                "entries": entries,
                "workers": settings.hash_workers,
                "root": str(root),
                "small_files": settings.hash_small_files,
                "attempts": settings.hash_attempts,
            }
            in_flight.append((window, runner.submit(hash_batch, params)))
            if len(in_flight) >= WINDOWS_IN_FLIGHT:
                record_oldest()
        while in_flight:
            record_oldest()
    recorder.flush()
