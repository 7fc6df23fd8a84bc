"""Drop-folder watcher: detect new or changed files once complete and hand them off in batches.

No Prefect here: the watcher only filters, debounces and calls back.
This module is the adapter to watchdog (inotify on Linux): events arrive on watchdog's
observer thread and are only queued there; ``tick()``, on the caller's thread, drains the
queue into ``connectors.watch_state.WatchState`` (where every decision is taken: when a
file is complete, when a batch goes out; the rules are listed there), re-arms lost
watches, and lets the state hand off what is due::

    watchdog thread:  event ──> queue
    tick():           drain queue ──> WatchState (file_changed, file_closed, moved, gone,
                                      seed_tree)
                      each root re-armed when deleted, replaced or re-created
                      WatchState.tick() ──> on_batch(list[ReadyFile])

Also:
    - Folder trees as deep as the file system allows (``PATH_MAX``) are watched: watchdog
      walks a tree recursively when arming, so the interpreter's recursion limit is raised
      to cover that depth once, at ``start()``.
    - Ready files not yet handed off when the watcher stops are not handed off; a restart
      finds them again with its startup scan (``scan_existing``).
    - ``move_to_done`` moves a handed-off file into a done folder once it is recorded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from connectors.folder_source import SkipHandler
from connectors.watch_state import (
    BatchHandler,
    ReadyFile,
    WatchOptions,
    WatchState,
    regular_signature,
)
from ledger.core.clock import Clock, MonotonicClock

__all__ = [
    "BatchHandler",
    "FolderWatcher",
    "ReadyFile",
    "WatchOptions",
    "move_to_done",
]

logger = logging.getLogger(__name__)

_EVENT_FILTER = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]


@dataclass
class _Arm:
    watch: ObservedWatch
    identity: tuple[int, int]  # (st_dev, st_ino) of the root when armed


class _Queue(FileSystemEventHandler):
    """watchdog handler that only queues events (runs on the observer thread)."""

    def __init__(self) -> None:
        self.events: queue.SimpleQueue[FileSystemEvent] = queue.SimpleQueue()

    def dispatch(self, event: FileSystemEvent) -> None:
        self.events.put(event)


class FolderWatcher:
    """Watch folders (recursively) and hand complete new or changed files to ``on_batch``.

    Args:
        folders: folders to watch; each is resolved once (a symlinked root is fine) and
            must exist when ``start()`` is called; later it may be emptied, deleted and
            re-created (the watch is re-armed by ``tick()`` and the folder re-scanned).
        on_batch: called from ``tick()`` with each batch (list of ``ReadyFile``, at most
            ``batch_max_files``); may return files to hand off again after
            ``retry_delay_s``; an exception is logged and the batch retried.
        options: completion, ignore and batching rules.
        clock: time source for settle and batch timing; monotonic wall time by default.
        observer_factory: builds the watchdog observer (e.g. ``PollingObserver`` for
            network file systems without inotify).
        on_skip: called with ``(relative path, reason)`` for each file refused (see
            ``folder_source.scan``; a name that is not UTF-8 is reported once per path,
            what a (re-)scan refuses each time that folder is scanned).

    Use ``run(stop_event)`` for a blocking loop, or ``start()`` / ``tick()`` / ``stop()``.
    """

    def __init__(
        self,
        folders: Sequence[str | os.PathLike[str]],
        on_batch: BatchHandler,
        *,
        options: WatchOptions | None = None,
        clock: Clock | None = None,
        observer_factory: Callable[[], BaseObserver] = Observer,
        on_skip: SkipHandler | None = None,
    ) -> None:
        if not folders:
            raise ValueError("at least one folder to watch is required")
        self._roots = tuple(dict.fromkeys(Path(f).resolve() for f in folders))
        self._options = options or WatchOptions()
        self._state = WatchState(
            self._roots,
            on_batch,
            options=self._options,
            clock=clock or MonotonicClock(),
            on_skip=on_skip,
        )
        self._observer_factory = observer_factory
        self._observer: BaseObserver | None = None
        self._handler = _Queue()
        self._arms: dict[Path, _Arm] = {}
        self._armed_once: set[Path] = set()

    # -- public --------------------------------------------------------------------------

    @property
    def roots(self) -> tuple[Path, ...]:
        """The watched folders, resolved."""
        return self._roots

    def is_armed(self, root: str | os.PathLike[str]) -> bool:
        """True while ``root`` (one of ``roots``) has a live watch."""
        arm = self._arms.get(Path(root).resolve())
        return arm is not None and self._alive(arm.watch)

    def pending_paths(self) -> frozenset[Path]:
        """Files seen but not handed off yet (waiting to settle or to be batched)."""
        return self._state.pending_paths()

    def ready_paths(self) -> frozenset[Path]:
        """Complete files waiting for their batch to be handed off."""
        return self._state.ready_paths()

    def start(self) -> None:
        """Start watching (idempotent); files already present become candidates if
        ``scan_existing``.

        Raises:
            FileNotFoundError, NotADirectoryError: a folder is missing or not a folder.
        """
        if self._observer is not None:
            return
        for root in self._roots:
            if not root.is_dir():
                raise (NotADirectoryError if root.exists() else FileNotFoundError)(
                    f"cannot watch {root}: not an existing folder"
                )
        _allow_deep_walks()
        self._observer = self._observer_factory()
        self._observer.start()
        self._rearm()

    def stop(self) -> None:
        """Stop watching (idempotent); ready files not handed off yet are dropped."""
        observer, self._observer = self._observer, None
        if observer is None:
            return
        with _quiet_stop():
            observer.stop()
            observer.join(timeout=10)
        self._arms.clear()
        self._armed_once.clear()

    def __enter__(self) -> FolderWatcher:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def tick(self) -> int:
        """Process queued events, re-arm lost watches, hand off what is complete.

        Returns:
            how many files were handed off (in zero or more ``on_batch`` calls).
        """
        if self._observer is None:
            raise RuntimeError("the watcher is not started")
        self._drain()
        self._rearm()
        return self._state.tick()

    def run(self, stop_event: threading.Event, *, poll_interval_s: float = 0.2) -> None:
        """Start, tick every ``poll_interval_s`` seconds until ``stop_event`` is set, stop."""
        self.start()
        try:
            while not stop_event.is_set():
                self.tick()
                stop_event.wait(poll_interval_s)
        finally:
            self.stop()

    # -- arming --------------------------------------------------------------------------

    def _rearm(self) -> None:
        for root in self._roots:
            identity = _dir_identity(root)
            arm = self._arms.get(root)
            if arm is not None and arm.identity == identity and self._alive(arm.watch):
                continue
            if arm is not None:
                self._disarm(root, arm)
            if identity is not None:
                self._arm(root, identity)

    def _arm(self, root: Path, identity: tuple[int, int]) -> None:
        assert self._observer is not None
        try:
            watch = self._observer.schedule(
                self._handler, str(root), recursive=True, event_filter=_EVENT_FILTER
            )
        except (OSError, RecursionError) as exc:
            logger.warning("cannot watch %s yet: %s", root, exc)
            return
        self._arms[root] = _Arm(watch, identity)
        again = root in self._armed_once
        self._armed_once.add(root)
        if again:
            logger.warning("watching %s again (re-created)", root)
        if again or self._options.scan_existing:
            self._state.seed_tree(root)

    def _disarm(self, root: Path, arm: _Arm) -> None:
        del self._arms[root]
        logger.warning("lost the watch on %s (deleted or replaced); waiting for it", root)
        if self._observer is not None:
            with _quiet_stop(), contextlib.suppress(KeyError):
                self._observer.unschedule(arm.watch)
        self._state.forget(root, tree=True)

    def _alive(self, watch: ObservedWatch) -> bool:
        observer = self._observer
        if observer is None:
            return False
        return any(e.watch == watch and e.is_alive() for e in observer.emitters)

    # -- events --------------------------------------------------------------------------

    def _drain(self) -> None:
        while True:
            try:
                event = self._handler.events.get_nowait()
            except queue.Empty:
                return
            self._on_event(event)

    def _on_event(self, event: FileSystemEvent) -> None:
        kind, src = event.event_type, _as_path(event.src_path)
        if kind == EVENT_TYPE_MOVED:
            self._state.moved(src, _as_path(event.dest_path), is_dir=event.is_directory)
        elif kind == EVENT_TYPE_DELETED:
            self._state.gone(src, is_dir=event.is_directory)
        elif event.is_directory:
            if kind == EVENT_TYPE_CREATED:
                self._state.seed_tree(src)
        elif kind == EVENT_TYPE_CLOSED:
            self._state.file_closed(src)
        elif kind in (EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED):
            self._state.file_changed(src)


def move_to_done(file: ReadyFile, done_dir: str | os.PathLike[str]) -> Path | None:
    """Move a handed-off file to ``done_dir/<relative path>``, unless it changed since.

    Call it only once the file's notarization is recorded. An existing file of the same
    name is kept: the moved file gets a `` (n)`` suffix before its extension.

    Returns:
        the new path, or None when the file is gone or its size or mtime changed since it
        was handed off (its change will be handed off again, so it is left in place).

    Raises:
        OSError: the move failed (permissions, disk full, ...).
    """
    if regular_signature(file.path) != (file.size_bytes, file.mtime_ns):
        return None
    target = _free_name(Path(done_dir) / file.relative_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(shutil.move(file.path, target))


class _DropStopRace(logging.Filter):
    """Drops watchdog's error for a read racing with its own shutdown (harmless)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in str(record.msg)


@contextlib.contextmanager
def _quiet_stop() -> Iterator[None]:
    """While watches are stopped (emitters joined inside), hide watchdog's shutdown race."""
    target = logging.getLogger("watchdog.observers.inotify")
    quiet = _DropStopRace()
    target.addFilter(quiet)
    try:
        yield
    finally:
        target.removeFilter(quiet)


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists() or candidate.is_symlink():
        candidate = path.with_name(f"{path.stem} ({n}){path.suffix}")
        n += 1
    return candidate


def _dir_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _as_path(raw: str | bytes) -> Path:
    return Path(os.fsdecode(raw))


def _allow_deep_walks() -> None:
    """Let watchdog's recursive ``os.walk`` (one frame per level in Python 3.11) reach the
    deepest folder a path can name: ``PATH_MAX`` bytes allow ``PATH_MAX / 2`` levels.

    The limit is only ever raised, never restored: lowering it while another thread is
    deep in a call could fail that thread.
    """
    try:
        path_max = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError):
        path_max = 4096
    needed = 1000 + path_max  # the usual headroom, plus two frames per level at most
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)
