"""The drop-folder watcher's decisions: when a file is complete and when a batch goes out.

``WatchState`` is the state machine behind ``connectors.folder_watch.FolderWatcher``: the
watcher turns watchdog's events into calls (``file_changed``, ``file_closed``, ``moved``,
``gone``, ``seed_tree``, ``forget``) and calls ``tick()``; no thread, lock or watchdog
type is involved here, and time comes only from the injected clock, so a test drives it
step by step with a ``ManualClock``. The only I/O is reading the files' type, size and
mtime (``lstat``) and scanning a folder that appeared::

    file_changed / file_closed / moved / gone / seed_tree
                  ──> candidates {path: last activity, last (size, mtime)}
    tick():       candidate complete? ──> ready
                      - closed after writing (inotify close-write), or
                      - a rename of a file already handed off, unchanged, or
                      - size and mtime unchanged and no event for ``settle_s``
                  ready ──> on_batch(list[ReadyFile])
                      every ``batch_max_files`` files, or ``batch_max_wait_s`` after
                      the oldest ready file

Rules:
    - Only regular files; symlinks are skipped and never followed (a file is handed off
      only if its real parent folder is inside the real root). FIFOs, sockets and devices
      are never opened (their type is read with ``lstat``), so none can block a tick.
    - A path whose name is not valid UTF-8 is refused (logged once, and given to
      ``on_skip``): it has no faithful text form to record (``folder_source``).
    - Names matching an ignore pattern (``folder_source.DEFAULT_IGNORE_PATTERNS``: hidden,
      ``*.part``, ``~$*``, ``*.swp``, ``*.tmp``), at any depth, are ignored; so is anything
      under ``exclude_dirs`` (e.g. the ``done/`` folder).
    - A file is handed off once per content: a path is handed again only when its size or
      mtime changed. A file renamed into place (``x.part`` -> ``x``) is new and must settle;
      a complete file renamed to a new name is handed off at once under its new path.
    - ``on_batch`` may return files to hand off again after ``retry_delay_s`` (e.g. not
      published yet); if it raises, the whole batch is retried after ``retry_delay_s``.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from connectors.folder_source import (
    DEFAULT_IGNORE_PATTERNS,
    SkipHandler,
    display_path,
    ignore_matcher,
    is_storable_path,
    scan,
)
from ledger.core.clock import Clock

__all__ = [
    "BatchHandler",
    "ReadyFile",
    "Signature",
    "WatchOptions",
    "WatchState",
    "regular_signature",
]

logger = logging.getLogger(__name__)

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


class WatchState:
    """Candidates, ready files and hand-offs of one watcher (module docstring: the rules).

    Args:
        roots: the watched folders, resolved.
        on_batch: called from ``tick()`` with each batch (at most ``batch_max_files``);
            may return files to hand off again after ``retry_delay_s``; an exception is
            logged and the batch retried.
        options: completion, ignore and batching rules.
        clock: time source for settle and batch timing (only differences are used).
        on_skip: called with ``(relative path, reason)`` for each file refused.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        on_batch: BatchHandler,
        *,
        options: WatchOptions,
        clock: Clock,
        on_skip: SkipHandler | None = None,
    ) -> None:
        self._roots = tuple(roots)
        self._on_batch = on_batch
        self._options = options
        self._excluded = tuple(Path(d).resolve() for d in options.exclude_dirs)
        self._clock = clock
        self._candidates: dict[Path, _Candidate] = {}
        self._handed: dict[Path, Signature] = {}
        self._ready: dict[Path, tuple[ReadyFile, float]] = {}
        self._on_skip = on_skip
        self._refused: set[Path] = set()  # names not UTF-8, already reported

    def pending_paths(self) -> frozenset[Path]:
        """Files seen but not handed off yet (waiting to settle or to be batched)."""
        return frozenset(self._candidates) | frozenset(self._ready)

    def ready_paths(self) -> frozenset[Path]:
        """Complete files waiting for their batch to be handed off."""
        return frozenset(self._ready)

    def tick(self) -> int:
        """Find the candidates that are complete now, hand off the batches that are due.

        Returns:
            how many files were handed off (in zero or more ``on_batch`` calls).
        """
        now = self._clock.now()
        self._poll(now)
        return self._flush(now)

    # -- what the file system reported ---------------------------------------------------

    def file_changed(self, path: Path) -> None:
        """A file was created or written to: it must settle (or be closed) again."""
        self._touch(path, closed=False)

    def file_closed(self, path: Path) -> None:
        """A file was closed after writing: complete at once, unless the options say not to
        trust close-write events (``trust_close_write``)."""
        self._touch(path, closed=self._options.trust_close_write)

    def moved(self, src: Path, dest: Path, *, is_dir: bool) -> None:
        """A file or folder was renamed; a complete file keeps counting as complete."""
        complete = None if is_dir else self._handed.get(src)
        self.gone(src, is_dir=is_dir)
        if is_dir:
            self.seed_tree(dest)
            return
        cand = self._touch(dest, closed=False)
        if cand is not None and complete is not None:
            cand.known_sig = complete

    def gone(self, path: Path, *, is_dir: bool) -> None:
        """A path was deleted or moved away; events can be late, so check it really is gone
        (a folder deleted and re-created at once has new files at the same paths)."""
        if not os.path.lexists(path):
            self.forget(path, tree=is_dir)
        elif os.path.isdir(path) and not os.path.islink(path):
            self.seed_tree(path)
        else:
            self.forget(path, tree=False)
            self._touch(path, closed=False)

    def seed_tree(self, directory: Path) -> None:
        """Make every file below ``directory`` (a root, or a folder inside one) a candidate
        (a folder appeared, or a root was armed again)."""
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

    def forget(self, path: Path, *, tree: bool) -> None:
        """Drop what is known of ``path`` (and, with ``tree``, of everything below it)."""
        for table in (self._candidates, self._handed, self._ready):
            table.pop(path, None)
            if tree:
                for key in [k for k in table if k.is_relative_to(path)]:
                    del table[key]
        self._refused.discard(path)
        if tree:
            self._refused = {p for p in self._refused if not p.is_relative_to(path)}

    # -- internals ----------------------------------------------------------------------

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
            sig = regular_signature(path)
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


def regular_signature(path: Path) -> Signature | None:
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


def _ignored(parts: Sequence[str], patterns: Sequence[str]) -> bool:
    ignored = ignore_matcher(tuple(patterns))
    return any(ignored(part) for part in parts)
