"""Folder source: list the regular files under a drop folder, safely and in a stable order.

Symlinks are never followed (neither to files nor to directories), so a link pointing
outside the folder cannot leak outside content into the pipeline. Names matching an
ignore pattern (hidden files, partial downloads, editor swap files) are skipped, for files
and directories alike. Entries that cannot be read are skipped with a logged warning.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "DEFAULT_IGNORE_PATTERNS",
    "ScanEntry",
    "scan",
    "source_name",
]

logger = logging.getLogger(__name__)

DEFAULT_IGNORE_PATTERNS: tuple[str, ...] = (".*", "*.part", "~$*", "*.swp", "*.tmp")


class ScanEntry(NamedTuple):
    """One regular file found by ``scan``.

    Attributes:
        relative_path: path relative to the scanned root, POSIX separators ("a/b.pdf").
        absolute_path: absolute path of the file (root resolved, file itself not resolved).
        size_bytes: size from ``lstat`` at scan time.
        mtime_s: modification time from ``lstat``, Unix seconds.
    """

    relative_path: str
    absolute_path: Path
    size_bytes: int
    mtime_s: float


def source_name(root: str | os.PathLike[str]) -> str:
    """Audit-store source name of a folder: ``"folder:<absolute resolved path>"``."""
    return f"folder:{Path(root).resolve()}"


def scan(
    root: str | os.PathLike[str],
    *,
    ignore_patterns: Sequence[str] = DEFAULT_IGNORE_PATTERNS,
) -> Iterator[ScanEntry]:
    """Yield the regular files under ``root``, recursively, sorted by relative path.

    Args:
        root: the folder to scan. The root itself is resolved (it may be a symlink);
            nothing below it is ever followed through a symlink.
        ignore_patterns: ``fnmatch`` patterns (case-sensitive) matched against each file
            and directory *name*; a matching directory is not descended into.

    Yields:
        ``ScanEntry`` per regular, readable file. Order: ascending ``relative_path``
        (string order), stable across runs.

    Raises:
        NotADirectoryError: ``root`` is not a directory.
        FileNotFoundError: ``root`` does not exist.
    """
    base = Path(root).resolve(strict=True)
    if not base.is_dir():
        raise NotADirectoryError(f"not a directory: {base}")
    yield from _walk(base, "", tuple(ignore_patterns))


def _ignored(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _sorted_children(directory: Path) -> list[tuple[str, os.DirEntry[str], bool]]:
    """Children as (sort key, entry, is_dir); dirs sort as "name/" so output is path-sorted."""
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError as exc:
        logger.warning("skipping unreadable directory %s: %s", directory, exc)
        return []
    children = []
    for entry in entries:
        is_dir = entry.is_dir(follow_symlinks=False)
        children.append((entry.name + "/" if is_dir else entry.name, entry, is_dir))
    children.sort(key=lambda child: child[0])
    return children


def _walk(directory: Path, prefix: str, patterns: tuple[str, ...]) -> Iterator[ScanEntry]:
    for _key, entry, is_dir in _sorted_children(directory):
        if _ignored(entry.name, patterns):
            continue
        if is_dir:
            yield from _walk(directory / entry.name, f"{prefix}{entry.name}/", patterns)
        elif entry.is_file(follow_symlinks=False):
            found = _file_entry(entry, prefix + entry.name)
            if found is not None:
                yield found


def _file_entry(entry: os.DirEntry[str], relative: str) -> ScanEntry | None:
    try:
        stat = entry.stat(follow_symlinks=False)
    except OSError as exc:
        logger.warning("skipping unreadable file %s: %s", entry.path, exc)
        return None
    if not os.access(entry.path, os.R_OK):
        logger.warning("skipping unreadable file %s: permission denied", entry.path)
        return None
    return ScanEntry(relative, Path(entry.path), stat.st_size, stat.st_mtime)
