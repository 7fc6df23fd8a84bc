"""Drop-folder watcher: detect new or changed files once complete and hand them off in batches.

No Prefect here: the watcher only filters, debounces and calls back (house style, habit 8).
Events come from watchdog (inotify on Linux) on an observer thread and are only queued
there; every decision is taken in ``tick()``, on the caller's thread, so the state needs
no locks and a test can drive it step by step with a ``ManualClock``::

    watchdog thread:  event ──> queue
    tick():           drain queue ──> candidates {path: last activity, last (size, mtime)}
                      candidate complete? ──> ready
                          - closed after writing (inotify close-write), or
                          - a rename of a file already handed off, unchanged, or
                          - size and mtime unchanged and no event for ``settle_s``
                      ready ──> on_batch(list[ReadyFile])
                          every ``batch_max_files`` files, or ``batch_max_wait_s`` after
                          the oldest ready file
                      each root re-armed when deleted, replaced or re-created

Rules:
    - Only regular files; symlinks are skipped and never followed (a file is handed off
      only if its real parent folder is inside the real root). FIFOs, sockets and devices
      are never opened (their type is read with ``lstat``), so none can block a tick.
    - A path whose name is not valid UTF-8 is refused (logged once, and given to
      ``on_skip``): it has no faithful text form to record (``folder_source``).
    - Folder trees as deep as the file system allows (``PATH_MAX``) are watched: watchdog
      walks a tree recursively when arming, so the interpreter's recursion limit is raised
      to cover that depth once, at ``start()``.
    - Names matching an ignore pattern (``folder_source.DEFAULT_IGNORE_PATTERNS``: hidden,
      ``*.part``, ``~$*``, ``*.swp``, ``*.tmp``), at any depth, are ignored; so is anything
      under ``exclude_dirs`` (e.g. the ``done/`` folder).
    - A file is handed off once per content: a path is handed again only when its size or
      mtime changed. A file renamed into place (``x.part`` -> ``x``) is new and must settle;
      a complete file renamed to a new name is handed off at once under its new path.
    - ``on_batch`` may return files to hand off again after ``retry_delay_s`` (e.g. not
      published yet); if it raises, the whole batch is retried after ``retry_delay_s``.
    - Ready files not yet handed off when the watcher stops are not handed off; a restart
      finds them again with its startup scan (``scan_existing``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import queue
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

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

from connectors.folder_source import (
    DEFAULT_IGNORE_PATTERNS,
    SkipHandler,
    display_path,
    is_storable_path,
    scan,
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

Signature = tuple[int, int]  # (size in bytes, mtime in ns)


class ReadyFile(NamedTuple):
    """A complete file handed off by the watcher.

    Attributes:
        root: the watched folder (resolved) the file belongs to.
        path: absolute path of the file (below ``root``; never a symlink).
        relative_path: path relative to ``root``, POSIX separators ("a/b.pdf").
        size_bytes: size when it was found complete (``lstat``).
        mtime_ns: modification time when found complete, nanoseconds since the epoch.
    """

    root: Path
    path: Path
    relative_path: str
    size_bytes: int
    mtime_ns: int


BatchHandler = Callable[[list[ReadyFile]], Iterable[ReadyFile] | None]
"""Called with each batch; may return files to hand off again after ``retry_delay_s``."""


@dataclass(frozen=True)
class WatchOptions:
    """How the watcher decides that files are complete and how it batches them.

    Attributes:
        settle_s: seconds a file's size and mtime must stay unchanged (with no event)
            before it counts as complete when no close-write event says so.
        batch_max_files: hand off as soon as this many files are ready (>= 1).
        batch_max_wait_s: hand off whatever is ready this long after the oldest ready
            file became ready (0: at the next tick).
        ignore_patterns: ``fnmatch`` patterns matched against every path component
            below the root (same defaults as ``folder_source.scan``).
        exclude_dirs: folders whose content is never handed off (e.g. ``done/``).
        scan_existing: hand off the files already present when the watcher starts.
        trust_close_write: a close-after-writing event marks the file complete at once;
            False waits ``settle_s`` for every file (writers that close between chunks).
        retry_delay_s: delay before re-handing files a batch handler returned or failed on.
    """

    settle_s: float = 2.0
    batch_max_files: int = 100
    batch_max_wait_s: float = 1.0
    ignore_patterns: tuple[str, ...] = DEFAULT_IGNORE_PATTERNS
    exclude_dirs: tuple[Path, ...] = ()
    scan_existing: bool = True
    trust_close_write: bool = True
    retry_delay_s: float = 10.0

    def __post_init__(self) -> None:
        if self.settle_s < 0 or self.batch_max_wait_s < 0 or self.retry_delay_s < 0:
            raise ValueError("settle_s, batch_max_wait_s and retry_delay_s must be >= 0")
        if self.batch_max_files < 1:
            raise ValueError(f"batch_max_files must be >= 1, got {self.batch_max_files}")


@dataclass
class _Candidate:
    root: Path
    since: float  # clock time of the last activity seen (event or stat change)
    sig: Signature | None = None  # last (size, mtime) seen by a tick
    closed: bool = False  # closed after writing, nothing since
    known_sig: Signature | None = None  # complete content (renamed handed-off file)
    not_before: float = 0.0  # retry delay


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
        self._on_batch = on_batch
        self._options = options or WatchOptions()
        self._excluded = tuple(Path(d).resolve() for d in self._options.exclude_dirs)
        self._clock: Clock = clock or MonotonicClock()
        self._observer_factory = observer_factory
        self._observer: BaseObserver | None = None
        self._handler = _Queue()
        self._arms: dict[Path, _Arm] = {}
        self._armed_once: set[Path] = set()
        self._candidates: dict[Path, _Candidate] = {}
        self._handed: dict[Path, Signature] = {}
        self._ready: dict[Path, tuple[ReadyFile, float]] = {}
        self._on_skip = on_skip
        self._refused: set[Path] = set()  # names not UTF-8, already reported

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
        return frozenset(self._candidates) | frozenset(self._ready)

    def ready_paths(self) -> frozenset[Path]:
        """Complete files waiting for their batch to be handed off."""
        return frozenset(self._ready)

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
        now = self._clock.now()
        self._poll(now)
        return self._flush(now)

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
            self._seed_tree(root)

    def _disarm(self, root: Path, arm: _Arm) -> None:
        del self._arms[root]
        logger.warning("lost the watch on %s (deleted or replaced); waiting for it", root)
        if self._observer is not None:
            with _quiet_stop(), contextlib.suppress(KeyError):
                self._observer.unschedule(arm.watch)
        self._forget(root, tree=True)

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
            self._on_moved(src, _as_path(event.dest_path), is_dir=event.is_directory)
        elif kind == EVENT_TYPE_DELETED:
            self._gone(src, is_dir=event.is_directory)
        elif event.is_directory:
            if kind == EVENT_TYPE_CREATED:
                self._seed_tree(src)
        elif kind == EVENT_TYPE_CLOSED:
            self._touch(src, closed=self._options.trust_close_write)
        elif kind in (EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED):
            self._touch(src, closed=False)

    def _on_moved(self, src: Path, dest: Path, *, is_dir: bool) -> None:
        complete = None if is_dir else self._handed.get(src)
        self._gone(src, is_dir=is_dir)
        if is_dir:
            self._seed_tree(dest)
            return
        cand = self._touch(dest, closed=False)
        if cand is not None and complete is not None:
            cand.known_sig = complete

    def _gone(self, path: Path, *, is_dir: bool) -> None:
        """A path was deleted or moved away; events can be late, so check it really is gone
        (a folder deleted and re-created at once has new files at the same paths)."""
        if not os.path.lexists(path):
            self._forget(path, tree=is_dir)
        elif os.path.isdir(path) and not os.path.islink(path):
            self._seed_tree(path)
        else:
            self._forget(path, tree=False)
            self._touch(path, closed=False)

    def _touch(self, path: Path, *, closed: bool) -> _Candidate | None:
        root = self._root_of(path)
        if root is None:
            return None
        now = self._clock.now()
        if self._ready.pop(path, None) is not None:
            self._handed.pop(path, None)
        cand = self._candidates.get(path)
        if cand is None:
            cand = self._candidates[path] = _Candidate(root, since=now)
        cand.since, cand.closed, cand.known_sig = now, closed, None
        return cand

    def _seed_tree(self, directory: Path) -> None:
        if directory not in self._roots and self._root_of(directory) is None:
            return
        try:
            entries = list(
                scan(
                    directory,
                    ignore_patterns=self._options.ignore_patterns,
                    on_skip=self._on_skip,
                )
            )
        except OSError as exc:
            logger.warning("cannot scan %s: %s", directory, exc)
            return
        for entry in entries:
            if entry.absolute_path not in self._candidates:
                self._touch(entry.absolute_path, closed=False)

    def _forget(self, path: Path, *, tree: bool) -> None:
        for table in (self._candidates, self._handed, self._ready):
            table.pop(path, None)
            if tree:
                for key in [k for k in table if k.is_relative_to(path)]:
                    del table[key]
        self._refused.discard(path)
        if tree:
            self._refused = {p for p in self._refused if not p.is_relative_to(path)}

    def _root_of(self, path: Path) -> Path | None:
        """The root ``path`` belongs to, or None (outside, excluded, ignored or a root)."""
        if any(path.is_relative_to(d) for d in self._excluded):
            return None
        roots = [r for r in self._roots if path != r and path.is_relative_to(r)]
        if not roots:
            return None
        root = max(roots, key=lambda r: len(r.parts))
        relative = path.relative_to(root)
        if _ignored(relative.parts, self._options.ignore_patterns):
            return None
        if not is_storable_path(str(relative)):
            self._refuse(path, relative.as_posix())
            return None
        return root

    def _refuse(self, path: Path, relative: str) -> None:
        """Report, once per path, a name that is not valid UTF-8."""
        if path in self._refused:
            return
        self._refused.add(path)
        shown, reason = display_path(relative), "name in bytes that are not UTF-8: rename it"
        logger.warning("skipping %s: %s", shown, reason)
        if self._on_skip is not None:
            self._on_skip(shown, reason)

    # -- completion and batching ---------------------------------------------------------

    def _poll(self, now: float) -> None:
        for path, cand in list(self._candidates.items()):
            if now < cand.not_before:
                continue
            sig = _regular_signature(path)
            if sig is None or sig == self._handed.get(path) or not _inside(path, cand.root):
                del self._candidates[path]
            elif cand.closed or sig == cand.known_sig or self._settled(cand, sig, now):
                del self._candidates[path]
                self._make_ready(path, cand.root, sig, now)

    def _settled(self, cand: _Candidate, sig: Signature, now: float) -> bool:
        if cand.sig is not None and cand.sig != sig:
            cand.since = now
        cand.sig = sig
        return now - cand.since >= self._options.settle_s

    def _make_ready(self, path: Path, root: Path, sig: Signature, now: float) -> None:
        rel = path.relative_to(root).as_posix()
        self._handed[path] = sig
        self._ready[path] = (ReadyFile(root, path, rel, sig[0], sig[1]), now)

    def _flush(self, now: float) -> int:
        handed = 0
        size = self._options.batch_max_files
        while self._ready and (
            len(self._ready) >= size
            or now - next(iter(self._ready.values()))[1] >= self._options.batch_max_wait_s
        ):
            batch = [self._ready.pop(p)[0] for p in list(self._ready)[:size]]
            handed += len(batch)
            self._hand_off(batch, now)
        return handed

    def _hand_off(self, batch: list[ReadyFile], now: float) -> None:
        try:
            retry = list(self._on_batch(batch) or ())
        except Exception:
            logger.exception(
                "handling a batch of %d files failed; retrying in %.0f s",
                len(batch),
                self._options.retry_delay_s,
            )
            retry = batch
        for file in retry:
            self._requeue(file, now)

    def _requeue(self, file: ReadyFile, now: float) -> None:
        if self._handed.get(file.path) != (file.size_bytes, file.mtime_ns):
            return  # changed or gone since: its own events decide
        del self._handed[file.path]
        cand = _Candidate(file.root, since=now, not_before=now + self._options.retry_delay_s)
        cand.known_sig = (file.size_bytes, file.mtime_ns)
        self._candidates.setdefault(file.path, cand)


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
    if _regular_signature(file.path) != (file.size_bytes, file.mtime_ns):
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


def _regular_signature(path: Path) -> Signature | None:
    """(size, mtime_ns) of a regular file (not followed through a symlink), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_size, st.st_mtime_ns


def _inside(path: Path, root: Path) -> bool:
    """True when the real folder holding ``path`` is ``root`` or below it."""
    try:
        return Path(os.path.realpath(path.parent)).is_relative_to(root)
    except OSError:
        return False


def _dir_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _ignored(parts: Sequence[str], patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(part, p) for part in parts for p in patterns)


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
