"""Reading the files a folder scan listed, safely: nothing followed, nothing swapped in.

``open_regular`` opens a listed file (``connectors.folder_source.scan``) for reading
without following a symlink at any level below the root and without blocking on a FIFO
swapped in after the scan; the returned file tells whether it changed while it was being
read (``check_unchanged``). ``open_root``, ``open_directory`` and ``open_file_at`` are
its steps, for a reader that opens many files of one folder.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path
from typing import NamedTuple

from connectors.errors import ConnectorPackageError
from connectors.folder_source import special_file_reason

__all__ = [
    "CHANGED_WHILE_HASHED",
    "FileChangedError",
    "FileSignature",
    "RegularFile",
    "UnsafeFileError",
    "check_unchanged",
    "open_directory",
    "open_file_at",
    "open_regular",
    "open_root",
    "signature_of",
]


class UnsafeFileError(ConnectorPackageError, OSError):
    """A path ``open_regular`` refuses: not a regular file, a symlink on the way, a name
    that leaves the root, or a file that changed while it was read."""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_NOT_A_NAME = frozenset(("", ".", ".."))


class FileSignature(NamedTuple):
    """What ``stat`` says of a file's version: any write, truncation or replacement moves
    at least one field (``signature_of``).

    Attributes:
        size: bytes. mtime_ns: modification time, ns since the epoch. ctime_ns: change
            time (inode change), ns (0 on Windows, where ``st_ctime`` is the creation
            time). inode, device: which file.
    """

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    device: int


#: ``st_ctime`` is the inode change time on POSIX systems, the creation time on Windows.
_CTIME_IS_CHANGE = os.name == "posix"


def signature_of(st: os.stat_result) -> FileSignature:
    """The ``FileSignature`` of a ``stat`` result."""
    ctime = st.st_ctime_ns if _CTIME_IS_CHANGE else 0
    return FileSignature(st.st_size, st.st_mtime_ns, ctime, st.st_ino, st.st_dev)


class FileChangedError(UnsafeFileError):
    """A file changed while it was read (``check_unchanged``): what was read may mix two
    versions, so it must not be used. ``errno`` is ``EAGAIN``: read it again later."""


#: The reason of a ``FileChangedError``, as recorded per file and printed.
CHANGED_WHILE_HASHED = "changed while hashed"


def check_unchanged(
    fd: int,
    before: os.stat_result,
    *,
    display: str,
    dir_fd: int | None = None,
    name: str | os.PathLike[str] | None = None,
) -> None:
    """Raise ``FileChangedError`` unless the open file ``fd`` still has the
    ``FileSignature`` of ``before`` (its ``fstat`` when it was opened) and, given ``name``,
    is still the file found under that name (``lstat``, relative to ``dir_fd``): call it
    after reading everything.

    An open file keeps its inode and device, so those are compared with what the name
    names now (a file replaced by a rename); size, mtime and ctime with a new ``fstat``.
    Metadata tells a change apart only when it moves a field: a write in place that
    keeps the size and lands within the same tick of the file system's clock as the
    file's previous change leaves them all equal (``README.md``, "What is notarized").

    Raises:
        FileChangedError: size, mtime, ctime, inode or device differ, the name now
            names another file, or it is gone.
    """
    # Field by field, not two FileSignature tuples: this runs once per file hashed, and
    # building them cost more than the two system calls (bench: 4 KiB files).
    after = os.fstat(fd)
    same = (
        after.st_mtime_ns == before.st_mtime_ns
        and after.st_size == before.st_size
        and (after.st_ctime_ns == before.st_ctime_ns or not _CTIME_IS_CHANGE)
    )
    if same and name is not None:
        try:
            now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            same = False
        else:
            same = now.st_ino == before.st_ino and now.st_dev == before.st_dev
    if not same:
        raise FileChangedError(errno.EAGAIN, CHANGED_WHILE_HASHED, display)


class RegularFile(io.FileIO):
    """A regular file opened by ``open_regular`` (read-only, unbuffered ``FileIO``).

    Attributes:
        opened_signature: its ``FileSignature`` when it was opened.
    """

    def __init__(self, fd: int, name: str) -> None:
        super().__init__(fd, "rb", closefd=True)
        self._opened = os.fstat(fd)
        self.opened_signature = signature_of(self._opened)
        self.display_name = name

    def changed(self) -> bool:
        """True when the file's signature differs from when it was opened (written to,
        truncated or replaced while it was read: what was read may mix two versions)."""
        try:
            self.check_unchanged()
        except FileChangedError:
            return True
        return False

    def check_unchanged(self) -> None:
        """Raise ``FileChangedError`` if ``changed()``; call it after reading everything
        (``check_unchanged`` of the module)."""
        check_unchanged(self.fileno(), self._opened, display=self.display_name)


def open_root(root: str | os.PathLike[str]) -> int:
    """A descriptor of the scanned folder (resolved, as ``scan`` resolves it) for
    ``open_regular(..., root_fd=...)``: many files then cost no resolving of the root each.
    The caller closes it (``os.close``).

    Raises:
        OSError: ``root`` is missing or not a directory.
    """
    return os.open(Path(root).resolve(strict=True), _DIR_FLAGS)


def open_regular(
    root: str | os.PathLike[str], relative_path: str, *, root_fd: int | None = None
) -> RegularFile:
    """Open ``root/relative_path`` for reading, never leaving ``root`` and never blocking.

    Each directory below ``root`` is opened relative to the previous one without
    following symlinks (``open_directory``), and the file itself is opened ``O_NOFOLLOW |
    O_NONBLOCK`` and checked to be a regular file before anything is read
    (``open_file_at``), so a file swapped for a symlink, a FIFO or a device after ``scan``
    listed it is refused, not read or waited on.

    Args:
        root: the scanned folder (as given to ``scan``; it may itself be a symlink).
        relative_path: a ``ScanEntry.relative_path`` ("a/b.pdf").
        root_fd: a descriptor from ``open_root(root)`` to start from (left open).

    Returns:
        the open file (close it, or use it as a context manager).

    Raises:
        UnsafeFileError: an empty, ``.`` or ``..`` component, or not a regular file.
        OSError: as ``open`` raises it: missing (``FileNotFoundError``), a symlink on the
            way (``ELOOP``/``ENOTDIR``), permission denied, ...
    """
    parent, slash, name = relative_path.rpartition("/")
    start = open_root(root) if root_fd is None else root_fd
    try:
        # "/x" has a slash and an empty parent: open_directory refuses it.
        directory = open_directory(start, parent) if slash else start
        try:
            fd, _st = open_file_at(directory, name, display=relative_path)
        finally:
            if directory != start:
                os.close(directory)
    finally:
        if start != root_fd:
            os.close(start)
    return RegularFile(fd, relative_path)


def open_directory(root_fd: int, relative_dir: str) -> int:
    """Open the folder ``relative_dir`` below ``root_fd`` one component at a time, each
    relative to the previous one and without following a symlink: a folder on the way
    swapped for a symlink cannot lead outside.

    The descriptor stays bound to the folder it reached, so the caller may keep it to
    open many files of that folder (``open_file_at``): each is still reached from the
    root without following any symlink.

    Args:
        root_fd: an ``open_root`` descriptor (left open).
        relative_dir: a folder below it with POSIX separators ("a/b").

    Returns:
        a new descriptor (``O_DIRECTORY``); the caller closes it.

    Raises:
        UnsafeFileError: an empty, ``.`` or ``..`` component.
        OSError: missing, a symlink on the way (``ELOOP``/``ENOTDIR``), permission denied.
    """
    parts = relative_dir.split("/")
    if any(part in _NOT_A_NAME for part in parts):
        raise UnsafeFileError(errno.EINVAL, "not a path below the folder", relative_dir)
    directory = root_fd
    try:
        for part in parts:
            below = os.open(part, _DIR_FLAGS, dir_fd=directory)
            if directory != root_fd:
                os.close(directory)
            directory = below
    except BaseException:
        if directory != root_fd:
            os.close(directory)
        raise
    return directory


def open_file_at(dir_fd: int, name: str, *, display: str) -> tuple[int, os.stat_result]:
    """Open the regular file ``name`` of the folder ``dir_fd`` for reading, without
    following a symlink and without blocking on a FIFO, and check its type with the one
    ``fstat`` whose result is returned (its size tells a reader how much to read).

    Args:
        dir_fd: a folder descriptor (``open_root``, ``open_directory``); left open.
        name: one file name (no ``/``). display: the path to name in errors.

    Returns:
        ``(descriptor, its fstat)``: blocking reads, the caller closes it.

    Raises:
        UnsafeFileError: an empty, ``.`` or ``..`` name, or not a regular file.
        OSError: as ``open`` raises it (a symlink gives ``ELOOP``).
    """
    if name in _NOT_A_NAME:
        raise UnsafeFileError(errno.EINVAL, "not a path below the folder", display)
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        kind = stat.S_IFMT(st.st_mode)
        if kind != stat.S_IFREG:
            raise UnsafeFileError(errno.EINVAL, special_file_reason(kind), display)
        # A regular file never blocks a read on Linux; cleared all the same (a network
        # file system may honour it), as a reader expects.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st
