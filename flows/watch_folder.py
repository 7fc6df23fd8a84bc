"""Drop folders: ``watch_folder`` runs a ``notarize_files`` flow run for every batch of
complete files the watcher (``connectors.folder_watch``) hands off.

Stages. Each batch run hashes, records and publishes its files (``pending`` ->
``published``) and does one non-blocking sweep of the ``ledger`` stage for the collection
(entries of earlier batches are usually in a directory block by then). It never waits for a
block: a watcher must keep up with incoming files. What is still ``published`` when the
folder goes quiet is finished by the scheduled ``collect_proofs`` sweep (or
``notary collect``).

``watch_folder`` itself is a plain long-running loop, not a flow run: a flow run that never
ends would hold a ``Running`` state forever and bury its batches; each batch is its own
``notarize-files`` flow run instead. Files whose notarization is not published yet (the API
was down) are handed off again after the watcher's retry delay, so a quiet folder still
gets published and moved. Idempotent: the document hash is the key; a startup scan hands
off every file present and the known ones are skipped.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from connectors.audit import (
    STAGE_ORDER,
    AuditStore,
    CollectionRecord,
    DocumentIn,
    RunStatus,
)
from connectors.folder_source import (
    DEFAULT_IGNORE_PATTERNS,
    ScanEntry,
    display_path,
    source_name,
)
from connectors.folder_watch import FolderWatcher, ReadyFile, WatchOptions, move_to_done
from flows.collector import fewer_collections
from flows.pipeline import (
    Recorder,
    Services,
    chunks,
    open_collection,
    open_services,
    publish_pending,
)
from flows.run_heartbeat import RunHeartbeat
from flows.run_summary import RunSummary, finish_counts
from flows.settings import PipelineSettings
from tasks.publish import ensure_collection_chain
from tasks.steps import hash_batch, sweep_ledger_once

__all__ = ["WatchTotals", "notarize_files", "watch_folder"]

logger = logging.getLogger(__name__)

_PUBLISHED = frozenset(STAGE_ORDER[STAGE_ORDER.index("published") :])


@flow(name="notarize-files", validate_parameters=False)
def notarize_files(
    paths: list[str],
    root: str,
    collection: str | None = None,
    settings: PipelineSettings | None = None,
) -> dict[str, Any]:
    """Notarize the given files of drop folder ``root``: hash, record, publish, one sweep.

    Args:
        paths: absolute paths of files below ``root`` (others are counted as errors).
        root: the drop folder; documents are recorded by path relative to it.
        collection: collection name; default the folder's absolute path.
        settings: pipeline settings.

    Returns:
        ``RunSummary.as_dict()`` plus ``file_stages``: relative path -> stage of the
        file's notarization in the collection's chain after the run (``"pending"``,
        ``"published"``, ... or ``"failed"``); files that could not be hashed are absent.

    Raises:
        ConnectorError: the publishing API or the node could not be reached.
    """
    settings = settings or PipelineSettings()
    base = Path(root).resolve()
    name = collection or str(base)
    stages: dict[str, str] = {}
    with open_services(settings) as services, fewer_collections():
        record = open_collection(services, name)
        summary = RunSummary(str(base), name, record.chain_id)
        run_id = services.store.runs.start(
            "notarize_files",
            parameters={"root": str(base), "collection": name, "files": len(paths)},
            stale_after_s=settings.run_stale_s,
        )
        status: RunStatus = "failed"
        beat = RunHeartbeat(services.store, run_id, interval_s=settings.run_heartbeat_s)
        try:
            stages = _run(summary, services, record, base=base, paths=paths)
            status = "completed"
        finally:
            beat.stop()
            finish_counts(summary, services.store)
            services.store.runs.finish(run_id, counts=summary.as_dict(), status=status)
    return summary.as_dict() | {"file_stages": stages}


def _run(
    summary: RunSummary,
    services: Services,
    collection: CollectionRecord,
    *,
    base: Path,
    paths: list[str],
) -> dict[str, str]:
    entries = _entries(summary, base, paths)
    summary.documents_seen = len(entries)
    summary.timed(
        "chain",
        lambda: ensure_collection_chain(
            services.api, collection, on_created=summary.add_chain_created
        ),
    )
    recorder = Recorder(summary, services, collection, source=source_name(base))
    docs = summary.timed(
        "hash", lambda: _hash_and_record(summary, services, recorder, entries, base)
    )
    summary.timed("publish", lambda: publish_pending(summary, services, summary.collection))
    summary.timed("ledger", lambda: _sweep_once(summary, services))
    get_run_logger().info("%d files of %s: %d published", len(entries), base, summary.published)
    return _file_stages(services.store, summary.collection, docs)


def _entries(summary: RunSummary, base: Path, paths: Sequence[str]) -> list[ScanEntry]:
    entries = []
    for raw in paths:
        path = Path(raw)
        try:
            rel = path.relative_to(base).as_posix()
            st = path.lstat()
        except (ValueError, OSError) as exc:
            summary.hash_errors += 1
            summary.note(f"{display_path(raw)}: {type(exc).__name__}")
            continue
        entries.append(ScanEntry(rel, path, st.st_size, st.st_mtime))
    return entries


def _hash_and_record(
    summary: RunSummary,
    services: Services,
    recorder: Recorder,
    entries: list[ScanEntry],
    base: Path,
) -> list[DocumentIn]:
    """Hash and record the batch's files (a watch batch is small: its files are held),
    then make the batch entry of what is new (``Recorder.flush``)."""
    settings = services.settings
    all_docs: list[DocumentIn] = []
    for batch in chunks(entries, settings.batch_size):
        results = hash_batch(
            batch,
            workers=settings.hash_workers,
            root=str(base),
            small_files=settings.hash_small_files,
            attempts=settings.hash_attempts,
        ).items
        docs = summary.add_hashed(batch, results)
        recorder.add(docs)
        all_docs += docs
    recorder.flush()
    return all_docs


def _sweep_once(summary: RunSummary, services: Services) -> None:
    """One ``ledger`` sweep of the collection; a failure is noted, never fatal."""
    state = sweep_ledger_once(
        services.store, services.node, collection=summary.collection, return_state=True
    )
    if not state.is_completed():
        summary.note("ledger sweep failed; `notary collect` finishes it later")
        return
    summary.receipts_rejected += state.result().rejected


def _file_stages(store: AuditStore, collection: str, docs: Sequence[DocumentIn]) -> dict[str, str]:
    stage_of: dict[str, str] = {}
    for sha in {d.sha256 for d in docs}:
        found = store.proofs.records(collection=collection, sha256=sha, limit=1)
        if found:
            stage_of[sha] = found[0].notarization.stage
    return {d.path: stage_of[d.sha256] for d in docs if d.sha256 in stage_of}


# -- the long-running loop -----------------------------------------------------------------


@dataclass
class WatchTotals:
    """What a ``watch_folder`` session did (counts over all its batch runs).

    ``published`` counts files a batch queued and published; ``published_for_other_runs``
    the pending notarizations a batch finished for earlier batches (a file handed off
    again after the API was down) or other runs (``RunSummary``); ``entries_written`` and
    ``entry_credits`` the ledger entries the batches posted and what they cost (EC).
    """

    batches: int = 0
    files: int = 0
    published: int = 0
    published_for_other_runs: int = 0
    skipped_known: int = 0
    publish_failed: int = 0
    hash_errors: int = 0
    entries_written: int = 0
    entry_credits: int = 0
    retried: int = 0
    moved: int = 0
    interrupted: bool = False
    errors: list[str] = field(default_factory=list)

    def add(self, result: dict[str, Any]) -> None:
        """Add the counts of one ``notarize_files`` result."""
        self.batches += 1
        self.files += result["documents_seen"]
        counted = ("published", "published_for_other_runs", "skipped_known")
        spent = ("entries_written", "entry_credits")
        for key in (*counted, *spent, "publish_failed", "hash_errors"):
            setattr(self, key, getattr(self, key) + result[key])
        for message in result["errors"]:
            self.note(message)

    def note(self, message: str) -> None:
        """Keep the last 20 error messages."""
        self.errors = [*self.errors, message][-20:]

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, list) else v) for k, v in vars(self).items()}


BatchResultHandler = Callable[[Path, dict[str, Any]], None]


def watch_folder(
    folders: Sequence[str | os.PathLike[str]],
    collection: str | None = None,
    settings: PipelineSettings | None = None,
    *,
    settle_s: float = 2.0,
    done_dir: str | os.PathLike[str] | None = None,
    stop_event: threading.Event | None = None,
    batch_max_files: int = 100,
    batch_max_wait_s: float = 1.0,
    retry_delay_s: float = 10.0,
    ignore_patterns: Sequence[str] = DEFAULT_IGNORE_PATTERNS,
    poll_interval_s: float = 0.2,
    on_batch_result: BatchResultHandler | None = None,
) -> dict[str, Any]:
    """Watch drop folders and notarize every complete new or changed file until stopped.

    Args:
        folders: drop folders (recursive); files already present are notarized first.
        collection: collection of every folder; default each folder's absolute path.
        settings: pipeline settings.
        settle_s: seconds a file must stay unchanged when no close-write event is seen.
        done_dir: move each file here once its notarization is published (``None``: leave
            files in place). A relative path is taken inside each folder (``"done"`` ->
            ``<folder>/done/<relative path>``); an absolute one is shared by all folders.
            Never watched.
        stop_event: set it to stop after the current batch. Ctrl-C (``KeyboardInterrupt``)
            stops at once (``interrupted`` is then true in the totals; a batch cut short is
            finished by the next run).
        batch_max_files, batch_max_wait_s: a batch run starts every that many files, or
            that long after the first complete file.
        retry_delay_s: delay before a failed batch or a not-yet-published file is retried.
        ignore_patterns: file and folder names never notarized.
        poll_interval_s: seconds between two watcher ticks.
        on_batch_result: called with (folder, ``notarize_files`` result) after each run.

    Returns:
        ``WatchTotals.as_dict()`` for the whole session.

    Raises:
        MissingApiKey: no API key configured.
        ConnectorError: the services cannot be reached at startup.
        FileNotFoundError, NotADirectoryError: a folder is missing.
        ValueError: ``done_dir`` is one of the watched folders.
    """
    settings = settings or PipelineSettings()
    roots = [Path(f).resolve() for f in folders]
    names = {root: collection or str(root) for root in roots}
    dones = _done_dirs(roots, done_dir)
    _preflight(settings, set(names.values()))
    totals = WatchTotals()
    handler = _BatchHandler(settings, names, dones, totals, on_batch_result)
    options = WatchOptions(
        settle_s=settle_s,
        batch_max_files=batch_max_files,
        batch_max_wait_s=batch_max_wait_s,
        ignore_patterns=tuple(ignore_patterns),
        exclude_dirs=tuple(d for d in dones.values() if d is not None),
        retry_delay_s=retry_delay_s,
    )
    watcher = FolderWatcher(roots, handler, options=options)
    try:
        watcher.run(stop_event or threading.Event(), poll_interval_s=poll_interval_s)
    except KeyboardInterrupt:
        totals.interrupted = True
        logger.warning("interrupted; stopped watching %s", ", ".join(map(str, roots)))
    return totals.as_dict()


def _done_dirs(
    roots: Sequence[Path], done_dir: str | os.PathLike[str] | None
) -> dict[Path, Path | None]:
    if done_dir is None:
        return dict.fromkeys(roots)
    dones = {root: (root / done_dir).resolve() for root in roots}
    if any(done in dones for done in dones.values()):
        raise ValueError(f"the done folder {done_dir} cannot be a watched folder")
    return dones  # type: ignore[return-value]


def _preflight(settings: PipelineSettings, collections: set[str]) -> None:
    """Fail fast on a missing key, unreachable API or refused publish mode; create the
    collections' chains."""
    with open_services(settings) as services:
        for name in sorted(collections):
            ensure_collection_chain(services.api, open_collection(services, name))


class _BatchHandler:
    """The watcher's ``on_batch``: one flow run per folder of the batch, then moves."""

    def __init__(
        self,
        settings: PipelineSettings,
        names: dict[Path, str],
        dones: dict[Path, Path | None],
        totals: WatchTotals,
        on_result: BatchResultHandler | None,
    ) -> None:
        self._settings, self._names, self._dones = settings, names, dones
        self._totals, self._on_result = totals, on_result

    def __call__(self, batch: list[ReadyFile]) -> list[ReadyFile]:
        retry: list[ReadyFile] = []
        for root, files in _by_root(batch).items():
            result = notarize_files(
                [str(f.path) for f in files], str(root), self._names[root], self._settings
            )
            self._totals.add(result)
            retry += self._after_run(root, files, result["file_stages"])
            if self._on_result is not None:
                self._on_result(root, result)
        self._totals.retried += len(retry)
        return retry

    def _after_run(
        self, root: Path, files: list[ReadyFile], stages: dict[str, str]
    ) -> list[ReadyFile]:
        """Move the published files to done/ (if asked); return the ones still pending."""
        retry = []
        done = self._dones[root]
        for file in files:
            stage = stages.get(file.relative_path)
            if stage == "pending":
                retry.append(file)
            elif stage in _PUBLISHED and done is not None:
                self._move(file, done)
        return retry

    def _move(self, file: ReadyFile, done: Path) -> None:
        try:
            if move_to_done(file, done) is not None:
                self._totals.moved += 1
        except OSError as exc:
            shown = display_path(str(file.path))
            self._totals.note(f"cannot move {shown} to {display_path(str(done))}: {exc.strerror}")
            logger.warning("cannot move %s to %s: %s", shown, display_path(str(done)), exc.strerror)


def _by_root(batch: Sequence[ReadyFile]) -> dict[Path, list[ReadyFile]]:
    groups: dict[Path, list[ReadyFile]] = {}
    for file in batch:
        groups.setdefault(file.root, []).append(file)
    return groups
