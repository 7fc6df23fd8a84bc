"""Document hashing: streaming SHA-256 of files, one at a time or many in threads.

Plain functions (no Prefect import); the flows wrap them in tasks. Memory use is flat:
a file is read through one reusable 1 MiB buffer whatever its size. ``hashlib`` releases
the GIL while hashing large buffers, so threads give real parallelism on many files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

__all__ = [
    "BUFFER_BYTES",
    "DEFAULT_MAX_WORKERS",
    "HashResult",
    "hash_file",
    "hash_files",
]

BUFFER_BYTES = 1024 * 1024
DEFAULT_MAX_WORKERS = 4

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
    """SHA-256 of a file's bytes, streamed through a 1 MiB buffer.

    Args:
        path: file to read (symlinks are followed by ``open``; the folder scanner never
            yields them).

    Returns:
        ``(sha256 hex, size in bytes)``.

    Raises:
        OSError: the file cannot be opened or read (missing, a directory, permission, I/O).
    """
    digest = hashlib.sha256()
    buffer = bytearray(BUFFER_BYTES)
    view = memoryview(buffer)
    size = 0
    with open(path, "rb", buffering=0) as handle:
        while n := handle.readinto(buffer):
            digest.update(view[:n])
            size += n
    return digest.hexdigest(), size


def _hash_one(path: StrPath) -> HashResult:
    try:
        sha, size = hash_file(path)
    except OSError as exc:
        return HashResult(path, error=f"{type(exc).__name__}: {exc}")
    return HashResult(path, sha256=sha, size_bytes=size)


def hash_files(
    paths: Sequence[StrPath], *, max_workers: int = DEFAULT_MAX_WORKERS
) -> list[HashResult]:
    """Hash many files in a thread pool; one unreadable file never fails the batch.

    Args:
        paths: files to hash.
        max_workers: threads to use (>= 1). Each holds one 1 MiB buffer at a time.

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
    workers = min(max_workers, len(paths))
    if workers == 1:
        return [_hash_one(p) for p in paths]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hash") as pool:
        return list(pool.map(_hash_one, paths))
