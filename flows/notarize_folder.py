"""The ``notarize_folder`` flow: scan, hash, record, publish, wait for ``ledger``, verify.

Orchestration only; the steps are batch tasks (``tasks.steps``) and the shared pipeline
steps (``flows.pipeline``). Hash batches run on the task runner chosen by
``PipelineSettings.task_runner`` (threads, or a Dask cluster whose workers see the folder
at the same path); recording, publishing and waiting stay in the flow's process. Re-running it on the same folder publishes nothing new:
documents whose hash the collection's chain already holds are skipped, and rows an
interrupted run left behind are finished.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from connectors.audit_store import RunStatus
from connectors.folder_source import ScanEntry, display_path, scan, source_name
from flows.pipeline import (
    RunSummary,
    Services,
    chunks,
    finish_counts,
    hash_task_runner,
    open_services,
    publish_artifact,
    publish_pending,
    record_batch,
    wait_ledger,
)
from flows.settings import PipelineSettings
from tasks.documents import collection_chain_id
from tasks.publish import ensure_collection_chain
from tasks.steps import hash_batch


@flow(name="notarize-folder", validate_parameters=False)
def notarize_folder(
    folder: str,
    collection: str | None = None,
    settings: PipelineSettings | None = None,
    wait_for_ledger_stage: bool = True,
) -> dict[str, Any]:
    """Notarize every regular file under ``folder`` into the chain of ``collection``.

    Args:
        folder: the folder to notarize (recursive; symlinks are not followed; hidden,
            ``.part``, ``.swp``, ``~$*`` and ``.tmp`` files are ignored).
        collection: collection name; default the folder's absolute path.
        settings: pipeline settings (services, audit store, batch sizes).
        wait_for_ledger_stage: wait (with retries and back-off) until every entry is in a
            directory block and its receipt is verified and stored.

    Returns:
        ``RunSummary.as_dict()`` (``documents_seen`` counts the files found).

    Raises:
        TaskRunnerUnavailable: ``task_runner`` is ``dask`` and ``prefect-dask`` is missing.
        ConnectorError: the publishing API or the node could not be reached.
    """
    settings = settings or PipelineSettings()
    root = Path(folder).resolve()
    name = collection or str(root)
    summary = RunSummary(str(root), name, collection_chain_id(name))
    with open_services(settings) as services:
        run_id = services.store.start_run(
            "notarize_folder", parameters={"folder": str(root), "collection": name}
        )
        status: RunStatus = "failed"
        try:
            _run(summary, services, root=root, wait=wait_for_ledger_stage)
            status = "completed"
        finally:
            finish_counts(summary, services.store)
            services.store.finish_run(run_id, counts=summary.as_dict(), status=status)
    publish_artifact(summary, key="notarize-folder-summary", title=f"Notarization of {root}")
    return summary.as_dict()


def _run(summary: RunSummary, services: Services, *, root: Path, wait: bool) -> None:
    log = get_run_logger()

    def refused(relative_path: str, reason: str) -> None:
        summary.refused += 1
        summary.note(f"{display_path(relative_path)}: {reason}")

    files = summary.timed("scan", lambda: list(scan(root, on_skip=refused)))
    summary.documents_seen = len(files)
    log.info("found %d files under %s", len(files), root)
    summary.timed("chain", lambda: ensure_collection_chain(services.api, summary.collection))
    new_ids = summary.timed("hash", lambda: _hash_and_record(summary, services, files, root))
    summary.timed("publish", lambda: publish_pending(summary, services, frozenset(new_ids)))
    if wait:
        summary.timed(
            "ledger", lambda: wait_ledger(summary, services, collection=summary.collection)
        )


def _hash_and_record(
    summary: RunSummary, services: Services, files: list[ScanEntry], root: Path
) -> list[int]:
    settings = services.settings
    batches = list(chunks(files, settings.batch_size))
    new_ids: list[int] = []
    with hash_task_runner(settings) as runner:
        params = [
            {"entries": b, "workers": settings.hash_workers, "root": str(root)} for b in batches
        ]
        futures = [runner.submit(hash_batch, p) for p in params]
        for batch, future in zip(batches, futures, strict=True):
            docs = summary.add_hashed(batch, future.result())
            new_ids += record_batch(summary, services, source=source_name(root), docs=docs)
    return new_ids
