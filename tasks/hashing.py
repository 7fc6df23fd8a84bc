"""Document hashing: SHA-256 of files, one at a time or many in threads.

Plain functions (no Prefect import); the flows wrap them in tasks. Memory use is flat: a
small file is read in one ``read`` straight into ``hashlib``, a larger one through a 1 MiB
buffer, one buffer per thread, reused from file to file.

Small files cost their per-file overhead, not their bytes, so a file below a folder is
opened with one ``openat`` relative to its folder's descriptor, kept from the previous
file of the run (files come folder by folder in scan order), checked with one ``fstat``
and read once. Threads help only with large files: ``hashlib`` releases the interpreter
lock only while hashing (inputs over 2,047 bytes), and on a small file most of the time
goes to Python code between system calls, which threads only fight over. So when the
caller knows the sizes (``hash_files(sizes=...)``, from the scan), a batch of small files
is hashed on one thread, and only larger files are spread over ``max_workers`` threads,
in runs of consecutive files.

A hash is only ever of a version of the file that existed: each file's ``fstat`` when it
was opened is compared, once it has been read to its end, with a new ``fstat`` and with
what its name now names (``connectors.folder_files.check_unchanged``: size, mtime and
ctime in nanoseconds, inode, device). A file written, truncated or replaced meanwhile is
read again, up to ``attempts`` passes in all, then given up as the per-file error
``FileChangedError: ... changed while hashed``: no document is recorded for it, so the
next run (or ``notary watch``, once the file settles) hashes it again.

The hashing threads are shared by every ``hash_files`` call of the process: one thread
for batches of small files, and ``max_workers`` threads for the others. A flow that runs
many batches at once (Prefect's thread pool runs every submitted task at once) still
hashes with that many threads, not that many per batch, so neither the threads fighting
for two cores nor their buffers grow with the number of files.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, NamedTuple

from connectors.folder_files import (
    CHANGED_WHILE_HASHED,
    FileChangedError,
    check_unchanged,
    open_directory,
    open_file_at,
    open_regular,
    open_root,
)

__all__ = [
    "BUFFER_BYTES",
    "DEFAULT_HASH_ATTEMPTS",
    "DEFAULT_MAX_WORKERS",
    "HashResult",
    "SMALL_FILE_BYTES",
    "SmallFilesIn",
    "THREADS_MIN_MEAN_BYTES",
    "hash_file",
    "hash_file_below",
    "hash_files",
    "small_batch",
]

BUFFER_BYTES = 1024 * 1024
#: Files smaller than this are read in one ``read`` (a bytes object of their size).
SMALL_FILE_BYTES = 256 * 1024
DEFAULT_MAX_WORKERS = 4
#: Passes over a file that keeps changing while it is read before it is given up as
#: "changed while hashed" (``NOTARY_HASH_ATTEMPTS``).
DEFAULT_HASH_ATTEMPTS = 3
#: Batches whose files average fewer bytes than this are hashed on one thread: below it
#: the per-file work under the interpreter lock (about 10 us) outweighs the hashing that
#: runs without it (about 2 us per 4 KiB with SHA instructions), and more threads only
#: add lock hand-offs (bench/hash_small.py: 4 threads took 1.9 x the time of one).
THREADS_MIN_MEAN_BYTES = 64 * 1024
#: At most this many files per task handed to a hashing thread (fewer when a batch has
#: few files, so that every thread gets several runs to balance large and small files).
_RUN_FILES = 64

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_local = threading.local()
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()

StrPath = str | os.PathLike[str]
#: Where a batch of small files is hashed (``tasks.steps.hash_batch``): ``process`` in the
#: process's hashing child (``tasks.hash_process``), ``thread`` on one thread of this one.
SmallFilesIn = Literal["process", "thread"]


class HashResult(NamedTuple):
    """Outcome of hashing one file (immutable; a named tuple: a frozen dataclass cost ~1 us
    more per file to build, under the interpreter lock the flow's main thread needs).

    Attributes:
        path: the path as given by the caller.
        sha256: lowercase hex SHA-256 of the file's bytes (64 chars), or ``None`` on error.
        size_bytes: number of bytes hashed, or ``None`` on error.
        error: ``"<ExceptionType>: <message>"`` when the file could not be read, else ``None``.
    """

    path: StrPath
    sha256: str | None = None
    size_bytes: int | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the file was hashed."""
        return self.error is None


def hash_file(path: StrPath, *, attempts: int = DEFAULT_HASH_ATTEMPTS) -> tuple[str, int]:
    """SHA-256 of a regular file's bytes (small files in one read, others streamed through
    a 1 MiB buffer), of a version that existed (module docstring).

    The file is opened without following a symlink and without blocking, and checked to be
    a regular file before anything is read: a file the scanner listed and something then
    swapped for a symlink (out of the folder), a FIFO or a device is refused, not read or
    waited on.

    Args:
        path: file to read.
        attempts: passes over a file that changes while it is read (>= 1).

    Returns:
        ``(sha256 hex, size in bytes)``.

    Raises:
        FileChangedError: it changed during each of ``attempts`` passes.
        OSError: the file cannot be opened or read (missing, a directory, permission, I/O),
            is a symlink (``ELOOP``) or is not a regular file (``EINVAL``).
    """

    def open_once() -> tuple[int, os.stat_result]:
        fd = os.open(path, _OPEN_FLAGS)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    return _hash_checked(open_once, display=os.fspath(path), attempts=attempts, name=path)


def _hash_checked(
    open_once: Callable[[], tuple[int, os.stat_result]],
    *,
    display: str,
    attempts: int,
    dir_fd: int | None = None,
    name: StrPath | None = None,
) -> tuple[str, int]:
    """``_digest`` of the file ``open_once()`` opens (descriptor and its ``fstat``), kept
    only when ``check_unchanged`` finds it the same file, unchanged, after the read
    (``name``: its name, relative to ``dir_fd``); else opened and read again, up to
    ``attempts`` passes.

    Raises:
        FileChangedError: changed during every pass. OSError: as ``open_once`` raises.
    """
    for _ in range(attempts):
        fd, st = open_once()
        try:
            digest, size = _digest(fd, st.st_size)
            if size == st.st_size:
                check_unchanged(fd, st, display=display, dir_fd=dir_fd, name=name)
                return digest, size
        except FileChangedError:
            pass
        finally:
            os.close(fd)
    raise FileChangedError(errno.EAGAIN, f"{CHANGED_WHILE_HASHED} ({attempts} attempts)", display)


def _buffer() -> memoryview:
    """This thread's 1 MiB read buffer (made on first use; it lives as long as the thread)."""
    view: memoryview | None = getattr(_local, "buffer", None)
    if view is None:
        view = _local.buffer = memoryview(bytearray(BUFFER_BYTES))
    return view


def hash_file_below(
    root: StrPath,
    relative_path: str,
    *,
    root_fd: int | None = None,
    attempts: int = DEFAULT_HASH_ATTEMPTS,
) -> tuple[str, int]:
    """SHA-256 of ``root/relative_path``, opened without following any symlink below
    ``root`` (``connectors.folder_files.open_regular``): a folder on the way swapped for a
    symlink after the scan cannot lead the hash out of ``root``.

    Args:
        root: the scanned folder. relative_path: a ``ScanEntry.relative_path``.
        root_fd: an ``open_root(root)`` descriptor to start from (saves resolving ``root``).
        attempts: passes over a file that changes while it is read (>= 1).

    Returns:
        ``(sha256 hex, size in bytes)`` of a version that existed (module docstring).

    Raises:
        OSError: as ``hash_file``; ``UnsafeFileError`` for a path that leaves ``root`` or
            is not a regular file; ``FileChangedError`` as ``hash_file``.
    """
    for _ in range(attempts):
        with open_regular(root, relative_path, root_fd=root_fd) as handle:
            digest, size = _digest(handle.fileno(), handle.opened_signature.size)
            if not handle.changed() and size == handle.opened_signature.size:
                return digest, size
    raise FileChangedError(
        errno.EAGAIN, f"{CHANGED_WHILE_HASHED} ({attempts} attempts)", relative_path
    )


def _digest(fd: int, size: int) -> tuple[str, int]:
    """``(sha256 hex, bytes read)`` of the first ``size`` bytes of ``fd`` (at its start),
    ``size`` being its size by the ``fstat`` made when it was opened.

    Never reads past ``size``: a file growing while it is read (a log being appended to)
    is not followed to an end that keeps moving; its new size fails the check made after
    the read (``_hash_checked``), and one that shrank gives fewer bytes. A small file is
    read with one ``read`` straight into ``hashlib``; larger files stream through this
    thread's buffer, so memory stays flat whatever their size.
    """
    if size < SMALL_FILE_BYTES:
        data = os.read(fd, size or 1)
        if len(data) > size:  # procfs, sysfs: a size of 0 that says nothing
            raise OSError(errno.EINVAL, "its size is not known (a special file system)")
        return hashlib.sha256(data).hexdigest(), len(data)
    digest, total = hashlib.sha256(), 0
    view = _buffer()
    while total < size:
        n = os.readv(fd, (view[: min(len(view), size - total)],))
        if not n:
            break
        digest.update(view[:n])
        total += n
    return digest.hexdigest(), total


class _Folder:
    """The folder of the file last opened below a root, kept open for the next one.

    A batch lists files in scan order, folder by folder, so consecutive files mostly share
    their folder: each is opened relative to the kept descriptor (one ``openat``), not by a
    walk from the root. The descriptor was reached from the root one component at a time
    without following a symlink (``open_directory``) and stays bound to that folder, so
    every file is still opened below the root; a folder swapped for a symlink after that
    is not followed either.
    """

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self.path = ""
        self.fd = root_fd

    def open(self, relative_dir: str) -> int:
        """Descriptor of ``relative_dir`` ("" for the root): the kept one, or a new one."""
        if relative_dir != self.path:
            self.close()
            self.fd = open_directory(self.root_fd, relative_dir)
            self.path = relative_dir
        return self.fd

    def close(self) -> None:
        if self.fd != self.root_fd:
            os.close(self.fd)
        self.fd, self.path = self.root_fd, ""


def _hash_below(path: StrPath, folder: _Folder, attempts: int) -> HashResult:
    """``hash_file_below`` of one file with the run's kept folder; errors captured."""
    relative_path = os.fspath(path)
    parent, slash, name = relative_path.rpartition("/")
    try:
        # "/x" has a slash and an empty parent: open_directory refuses it.
        directory = folder.open(parent) if slash else folder.root_fd
        sha, size = _hash_checked(
            lambda: open_file_at(directory, name, display=relative_path),
            display=relative_path,
            attempts=attempts,
            dir_fd=directory,
            name=name,
        )
    except OSError as exc:
        return HashResult(path, error=_error_text(exc))
    return HashResult(path, sha256=sha, size_bytes=size)


def _error_text(exc: OSError) -> str:
    """``"<ExceptionType>: <reason>"`` of a file that could not be hashed (its path is
    named by whoever shows the error, ``connectors.folder_source.display_path``)."""
    return f"{type(exc).__name__}: {exc.strerror or exc}"


def _hash_one(path: StrPath, attempts: int) -> HashResult:
    try:
        sha, size = hash_file(path, attempts=attempts)
    except OSError as exc:
        return HashResult(path, error=_error_text(exc))
    return HashResult(path, sha256=sha, size_bytes=size)


def _hash_run(
    paths: Sequence[StrPath], root_fd: int | None, attempts: int = DEFAULT_HASH_ATTEMPTS
) -> list[HashResult]:
    if root_fd is None:
        return [_hash_one(p, attempts) for p in paths]
    folder = _Folder(root_fd)
    try:
        return [_hash_below(p, folder, attempts) for p in paths]
    finally:
        folder.close()


def _pool(workers: int) -> ThreadPoolExecutor:
    """The process's hashing threads for this ``max_workers`` (made on first use; idle
    threads cost no CPU and end with the process). Keyed by process id too: a forked
    child has none of its parent's threads."""
    key = (os.getpid(), workers)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(workers, thread_name_prefix="hash")
        return pool


def hash_files(
    paths: Sequence[StrPath],
    *,
    max_workers: int = DEFAULT_MAX_WORKERS,
    root: StrPath | None = None,
    sizes: Sequence[int] | None = None,
    attempts: int = DEFAULT_HASH_ATTEMPTS,
) -> list[HashResult]:
    """Hash many files in threads; one unreadable file never fails the batch.

    Args:
        paths: files to hash; with ``root``, paths relative to it (``ScanEntry.relative_path``).
        max_workers: threads to use (>= 1), shared with the process's other calls that
            give the same value (module docstring). Each holds one 1 MiB buffer.
        root: the scanned folder: each file is then opened below it without following any
            symlink on the way (``hash_file_below``).
        sizes: the files' sizes in bytes as the scan saw them (``ScanEntry.size_bytes``),
            one per path, when known: if they average under ``THREADS_MIN_MEAN_BYTES``
            the batch is hashed on the process's one small-file thread instead of
            ``max_workers`` threads. Only a hint: the bytes hashed are those read.
        attempts: passes over a file that changes while it is read before it is given
            up as "changed while hashed" (>= 1; module docstring).

    Returns:
        One ``HashResult`` per input path, in input order. Files that cannot be read
        (``OSError``, ``FileChangedError`` included) give a result with ``error`` set and
        ``sha256``/``size_bytes`` None.

    Raises:
        ValueError: ``max_workers`` or ``attempts`` < 1, or ``sizes`` not one per path.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    if sizes is not None and len(sizes) != len(paths):
        raise ValueError(f"{len(sizes)} sizes for {len(paths)} paths")
    if not paths:
        return []
    small = sizes is not None and small_batch(sizes)
    if root is None:
        return _hash_runs(paths, max_workers, None, small=small, attempts=attempts)
    try:
        root_fd = open_root(root)
    except OSError as exc:
        return [HashResult(p, error=_error_text(exc)) for p in paths]
    try:
        return _hash_runs(paths, max_workers, root_fd, small=small, attempts=attempts)
    finally:
        os.close(root_fd)


def small_batch(sizes: Sequence[int]) -> bool:
    """True when files of these sizes (bytes) are hashed best on one thread: their mean is
    under ``THREADS_MIN_MEAN_BYTES`` (module docstring). False for no files."""
    return bool(sizes) and sum(sizes) < THREADS_MIN_MEAN_BYTES * len(sizes)


def _hash_runs(
    paths: Sequence[StrPath],
    max_workers: int,
    root_fd: int | None,
    *,
    small: bool,
    attempts: int,
) -> list[HashResult]:
    workers = min(max_workers, len(paths))
    if workers == 1:
        return _hash_run(paths, root_fd, attempts)
    if small:  # one run on the process's one small-file thread (module docstring)
        return _pool(1).submit(_hash_run, paths, root_fd, attempts).result()
    size = max(1, min(_RUN_FILES, len(paths) // (4 * workers)))
    runs = [paths[i : i + size] for i in range(0, len(paths), size)]
    results = _pool(max_workers).map(_hash_run, runs, [root_fd] * len(runs), [attempts] * len(runs))
    return [result for run in results for result in run]
