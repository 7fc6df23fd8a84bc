"""Document hashing: streaming SHA-256 of files, one at a time or many in threads.

Plain functions (no Prefect import); the flows wrap them in tasks. Memory use is flat:
a file is read through a 1 MiB buffer whatever its size, one buffer per thread, reused
from file to file. ``hashlib`` releases the GIL while hashing large buffers, so threads
give real parallelism on many files.

Small files cost their per-file overhead, not their bytes: a fresh 1 MiB buffer per file
(zeroed, so 256 page faults) and a pool task per file cost more than hashing 4 KiB. So the
buffer is kept per thread, and ``hash_files`` hands each thread runs of consecutive files.

The hashing threads are shared by every ``hash_files`` call of the process with the same
``max_workers``: a flow that runs many batches at once (Prefect's thread pool runs every
submitted task at once) still hashes with ``max_workers`` threads, not that many per
batch, so neither the threads fighting for two cores nor their buffers grow with the
number of files.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from connectors.folder_source import open_regular, open_root

__all__ = [
    "BUFFER_BYTES",
    "DEFAULT_MAX_WORKERS",
    "HashResult",
    "hash_file",
    "hash_file_below",
    "hash_files",
]

BUFFER_BYTES = 1024 * 1024
DEFAULT_MAX_WORKERS = 4
#: At most this many files per task handed to a hashing thread (fewer when a batch has
#: few files, so that every thread gets several runs to balance large and small files).
_RUN_FILES = 64

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_local = threading.local()
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()

StrPath = str | os.PathLike[str]


@dataclass(frozen=True)
class HashResult:
    """Outcome of hashing one file.

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


def hash_file(path: StrPath) -> tuple[str, int]:
    """SHA-256 of a regular file's bytes, streamed through a 1 MiB buffer.

    The file is opened without following a symlink and without blocking, and checked to be
    a regular file before anything is read: a file the scanner listed and something then
    swapped for a symlink (out of the folder), a FIFO or a device is refused, not read or
    waited on.

    Args:
        path: file to read.

    Returns:
        ``(sha256 hex, size in bytes)``.

    Raises:
        OSError: the file cannot be opened or read (missing, a directory, permission, I/O),
            is a symlink (``ELOOP``) or is not a regular file (``EINVAL``).
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with open(fd, "rb", buffering=0) as handle:
        return _digest(handle)


def _buffer() -> tuple[bytearray, memoryview]:
    """This thread's read buffer (made on first use; it lives as long as the thread)."""
    pair: tuple[bytearray, memoryview] | None = getattr(_local, "buffer", None)
    if pair is None:
        buffer = bytearray(BUFFER_BYTES)
        pair = _local.buffer = (buffer, memoryview(buffer))
    return pair


def hash_file_below(
    root: StrPath, relative_path: str, *, root_fd: int | None = None
) -> tuple[str, int]:
    """SHA-256 of ``root/relative_path``, opened without following any symlink below
    ``root`` (``connectors.folder_source.open_regular``): a folder on the way swapped for a
    symlink after the scan cannot lead the hash out of ``root``.

    Args:
        root: the scanned folder. relative_path: a ``ScanEntry.relative_path``.
        root_fd: an ``open_root(root)`` descriptor to start from (saves resolving ``root``).

    Returns:
        ``(sha256 hex, size in bytes)``.

    Raises:
        OSError: as ``hash_file``; ``UnsafeFileError`` for a path that leaves ``root`` or
            is not a regular file.
    """
    with open_regular(root, relative_path, root_fd=root_fd) as handle:
        return _digest(handle)


def _digest(handle: io.RawIOBase) -> tuple[str, int]:
    """``(sha256 hex, size)`` of what is left to read of ``handle``, through this thread's
    buffer."""
    buffer, view = _buffer()
    digest = hashlib.sha256()
    size = 0
    while n := handle.readinto(buffer):
        digest.update(view[:n])
        size += n
    return digest.hexdigest(), size


def _hash_one(path: StrPath, below: tuple[StrPath, int] | None = None) -> HashResult:
    try:
        if below is None:
            sha, size = hash_file(path)
        else:
            sha, size = hash_file_below(below[0], os.fspath(path), root_fd=below[1])
    except OSError as exc:
        return HashResult(path, error=f"{type(exc).__name__}: {exc}")
    return HashResult(path, sha256=sha, size_bytes=size)


def _hash_run(
    paths: Sequence[StrPath], below: tuple[StrPath, int] | None = None
) -> list[HashResult]:
    return [_hash_one(p, below) for p in paths]


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
) -> list[HashResult]:
    """Hash many files in a thread pool; one unreadable file never fails the batch.

    Args:
        paths: files to hash; with ``root``, paths relative to it (``ScanEntry.relative_path``).
        max_workers: threads to use (>= 1), shared with the process's other calls that
            give the same value (module docstring). Each holds one 1 MiB buffer.
        root: the scanned folder: each file is then opened below it without following any
            symlink on the way (``hash_file_below``).

    Returns:
        One ``HashResult`` per input path, in input order. Files that cannot be read
        (``OSError``) give a result with ``error`` set and ``sha256``/``size_bytes`` None.

    Raises:
        ValueError: ``max_workers`` < 1.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    if not paths:
        return []
    if root is None:
        return _hash_runs(paths, max_workers, None)
    try:
        root_fd = open_root(root)
    except OSError as exc:
        return [HashResult(p, error=f"{type(exc).__name__}: {exc}") for p in paths]
    try:
        return _hash_runs(paths, max_workers, (root, root_fd))
    finally:
        os.close(root_fd)


def _hash_runs(
    paths: Sequence[StrPath], max_workers: int, below: tuple[StrPath, int] | None
) -> list[HashResult]:
    workers = min(max_workers, len(paths))
    if workers == 1:
        return _hash_run(paths, below)
    size = max(1, min(_RUN_FILES, len(paths) // (4 * workers)))
    runs = [paths[i : i + size] for i in range(0, len(paths), size)]
    results = _pool(max_workers).map(_hash_run, runs, [below] * len(runs))
    return [result for run in results for result in run]
