"""Folder source: list the regular files under a drop folder, safely and in a stable order.

Symlinks are never followed (neither to files nor to directories), so a link pointing
outside the folder cannot leak outside content into the pipeline. Names matching an
ignore pattern (hidden files, partial downloads, editor swap files) are skipped, for files
and directories alike.

Everything else that is not listed is *refused*, each with a reason given to the
caller's ``on_skip`` (and logged): symbolic links, FIFOs, sockets and devices (never
opened, so a FIFO cannot block a run), entries that vanish or cannot be read, paths too
long for the system, and names that are not valid UTF-8. A path is stored as text in the
audit store and published in entries; a name that is not UTF-8 has no faithful text form
(Python keeps its bytes as lone surrogates, which no database or JSON encoder accepts),
so it is refused with a clear reason instead of failing the run when it is recorded.

``open_regular`` opens a listed file for reading without following a symlink at any
level below the root and without blocking on a FIFO swapped in after the scan; the
returned file tells whether it changed while it was being read.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import io
import logging
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from connectors.errors import ConnectorPackageError

__all__ = [
    "CHANGED_WHILE_HASHED",
    "DEFAULT_IGNORE_PATTERNS",
    "FileChangedError",
    "FileSignature",
    "Refusal",
    "RefusalHandler",
    "RegularFile",
    "ScanEntry",
    "SkipHandler",
    "UnsafeFileError",
    "check_unchanged",
    "display_path",
    "ignore_matcher",
    "is_storable_path",
    "open_directory",
    "open_file_at",
    "open_regular",
    "open_root",
    "report_refusal",
    "scan",
    "scan_refusing",
    "scan_root",
    "signature_of",
    "source_name",
]

logger = logging.getLogger(__name__)

DEFAULT_IGNORE_PATTERNS: tuple[str, ...] = (".*", "*.part", "~$*", "*.swp", "*.tmp")

SkipHandler = Callable[[str, str], None]
"""``on_skip(relative_path, reason)``: an entry ``scan`` refused. ``relative_path`` is
printable (see ``display_path``); ``reason`` is one human sentence."""

# ``open`` checks the effective user; ``access`` the real one unless told otherwise.
_EFFECTIVE_IDS = os.access in os.supports_effective_ids

_NOT_REGULAR = {
    stat.S_IFLNK: "a symbolic link (never followed)",
    stat.S_IFIFO: "a FIFO (named pipe), not a regular file",
    stat.S_IFSOCK: "a socket, not a regular file",
    stat.S_IFCHR: "a character device, not a regular file",
    stat.S_IFBLK: "a block device, not a regular file",
}


class _ScanFields(NamedTuple):
    relative_path: str
    absolute: str | Path
    size_bytes: int
    mtime_s: float


class ScanEntry(_ScanFields):
    """One regular file found by ``scan``.

    Attributes:
        relative_path: path relative to the scanned root, POSIX separators ("a/b.pdf").
        absolute: absolute path of the file (root resolved, file itself not resolved), as
            the scan found it (a ``str``; ``absolute_path`` is the ``Path``).
        size_bytes: size from ``lstat`` at scan time.
        mtime_s: modification time from ``lstat``, Unix seconds.
    """

    __slots__ = ()

    @property
    def absolute_path(self) -> Path:
        """``absolute`` as a ``Path``. Made on demand: a ``Path`` per file cost the scan
        about a third of its time (pathlib parses the string), and the flow never uses it."""
        path = self.absolute
        return path if isinstance(path, Path) else Path(path)


class UnsafeFileError(ConnectorPackageError, OSError):
    """A path ``open_regular`` refuses: not a regular file, a symlink on the way, a name
    that leaves the root, or a file that changed while it was read."""


def source_name(root: str | os.PathLike[str]) -> str:
    """Audit-store source name of a folder: ``"folder:<absolute resolved path>"``."""
    return f"folder:{Path(root).resolve()}"


def is_storable_path(relative_path: str) -> bool:
    """True when ``relative_path`` is valid Unicode text (it encodes as UTF-8).

    A file name that is not UTF-8 comes out of ``os`` with lone surrogates standing for
    its bytes; such text cannot be stored, published or shown faithfully.
    """
    try:
        relative_path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display_path(relative_path: str) -> str:
    """The one printable form of a path, for every message, note and log line that names
    a file: one line, and each path shown differently.

    A backslash is doubled; a newline, carriage return or tab becomes ``\\n``, ``\\r``,
    ``\\t``; every other control character becomes ``\\xNN`` (C0, DEL) or ``\\uNNNN`` (C1,
    the Unicode line and paragraph separators); bytes that are not UTF-8 (lone surrogates
    from ``os``) become ``\\xNN`` (``\\x80`` to ``\\xff``). Everything else is shown as it
    is.
    """
    shown = _UNPRINTABLE.sub(_escape_char, relative_path)
    return shown.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


_UNPRINTABLE = re.compile(r"[\\\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def scan(
    root: str | os.PathLike[str],
    *,
    ignore_patterns: Sequence[str] = DEFAULT_IGNORE_PATTERNS,
    on_skip: SkipHandler | None = None,
) -> Iterator[ScanEntry]:
    """Yield the regular files under ``root``, recursively, sorted by relative path.

    Args:
        root: the folder to scan. The root itself is resolved (it may be a symlink);
            nothing below it is ever followed through a symlink.
        ignore_patterns: ``fnmatch`` patterns (case-sensitive) matched against each file
            and directory *name*; a matching directory is not descended into.
        on_skip: called with ``(relative path, reason)`` for each entry that is not
            ignored but refused (module docstring); refusals are also logged (WARNING for
            what a user should fix: unreadable, vanished, too long, not UTF-8; DEBUG for
            symlinks and special files, which a folder may hold by design).

    Yields:
        ``ScanEntry`` per regular, readable file. Order: ascending ``relative_path``
        (string order), stable across runs. The walk holds one directory listing per
        level (no recursion), so any depth the file system allows is fine.

    Raises:
        NotADirectoryError: ``root`` is not a directory.
        FileNotFoundError: ``root`` does not exist.
    """
    return scan_refusing(
        root,
        ignore_patterns=ignore_patterns,
        on_refusal=functools.partial(report_refusal, on_skip),
    )


class Refusal(NamedTuple):
    """An entry ``scan`` refused, before it is reported (``report_refusal``).

    Attributes:
        level: the ``logging`` level it is logged at.
        what: what was refused ("unreadable file", "special file", ...).
        relative: its path relative to the root, as the file system names it.
        detail: why.
    """

    level: int
    what: str
    relative: str
    detail: str


RefusalHandler = Callable[[Refusal], None]


def report_refusal(on_skip: SkipHandler | None, refusal: Refusal) -> None:
    """Log a refusal ("skipping <what> <path>: <detail>") and pass it to ``on_skip``
    (printable path, reason "<what>: <detail>"), as ``scan`` does with each."""
    shown = display_path(refusal.relative)
    logger.log(refusal.level, "skipping %s %s: %s", refusal.what, shown, refusal.detail)
    if on_skip is not None:
        on_skip(shown, f"{refusal.what}: {refusal.detail}")


def scan_root(root: str | os.PathLike[str]) -> Path:
    """``root`` resolved, as ``scan`` starts from it.

    Raises:
        NotADirectoryError: ``root`` is not a directory.
        FileNotFoundError: ``root`` does not exist.
    """
    base = Path(root).resolve(strict=True)
    if not base.is_dir():
        raise NotADirectoryError(f"not a directory: {base}")
    return base


def scan_refusing(
    root: str | os.PathLike[str],
    *,
    ignore_patterns: Sequence[str] = DEFAULT_IGNORE_PATTERNS,
    on_refusal: RefusalHandler,
) -> Iterator[ScanEntry]:
    """``scan``, with each refusal handed to ``on_refusal`` as it is found, neither logged
    nor reported (a scan in another process: its parent reports them, ``report_refusal``).

    Raises:
        NotADirectoryError, FileNotFoundError: as ``scan``.
    """
    base = scan_root(root)
    ignored = ignore_matcher(tuple(ignore_patterns))
    report = _Reporter(on_refusal)
    # A stack of iterators over sorted listings: depth-first, in path order.
    stack = [iter(_sorted_children(base, "", report))]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        _key, entry, is_dir, relative = child
        if ignored(entry.name):
            continue
        if not is_storable_path(relative):
            what = "directory" if is_dir else "file"
            report.warn(f"{what} named in bytes that are not UTF-8", relative, "rename it")
        elif is_dir:
            stack.append(iter(_sorted_children(Path(entry.path), relative + "/", report)))
        else:
            found = _file_entry(entry, relative, report)
            if found is not None:
                yield found


class _Reporter:
    """Hands each refusal to ``on_refusal``: WARNING for what a user should fix, DEBUG
    for what a folder may hold by design."""

    def __init__(self, on_refusal: RefusalHandler) -> None:
        self._on_refusal = on_refusal

    def warn(self, what: str, relative: str, detail: str) -> None:
        self._on_refusal(Refusal(logging.WARNING, what, relative, detail))

    def note(self, what: str, relative: str, detail: str) -> None:
        self._on_refusal(Refusal(logging.DEBUG, what, relative, detail))


@functools.lru_cache(maxsize=32)
def ignore_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """A test of one file or directory *name* against ``fnmatch`` patterns
    (case-sensitive, as ``fnmatch.fnmatchcase``): true when any pattern matches.

    The patterns are compiled into one regular expression, so a name costs one match
    whatever their number (the scan tests every name of a folder).
    """
    if not patterns:
        return lambda _name: False
    match = re.compile("|".join(fnmatch.translate(p) for p in patterns)).match
    return lambda name: match(name) is not None


def _sorted_children(
    directory: Path, prefix: str, report: _Reporter
) -> list[tuple[str, os.DirEntry[str], bool, str]]:
    """Children as (sort key, entry, is_dir, relative path); dirs sort as "name/" so the
    output is path-sorted."""
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError as exc:
        report.warn("unreadable directory", prefix.rstrip("/") or ".", _reason(exc))
        return []
    children = []
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:  # vanished or unreadable: _file_entry says which
            is_dir = False
        children.append(
            (entry.name + "/" if is_dir else entry.name, entry, is_dir, prefix + entry.name)
        )
    children.sort(key=lambda child: child[0])
    return children


def _file_entry(entry: os.DirEntry[str], relative: str, report: _Reporter) -> ScanEntry | None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        report.warn("unreadable file", relative, _reason(exc))
        return None
    kind = stat.S_IFMT(st.st_mode)
    if kind != stat.S_IFREG:
        report.note("special file", relative, _NOT_REGULAR.get(kind, "not a regular file"))
        return None
    if not os.access(entry.path, os.R_OK, effective_ids=_EFFECTIVE_IDS):
        report.warn("unreadable file", relative, "permission denied")
        return None
    return ScanEntry(relative, entry.path, st.st_size, st.st_mtime)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is too long for the file system"
    return exc.strerror or str(exc)


# -- reading -----------------------------------------------------------------------------

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
            raise UnsafeFileError(
                errno.EINVAL, _NOT_REGULAR.get(kind, "not a regular file"), display
            )
        # A regular file never blocks a read on Linux; cleared all the same (a network
        # file system may honour it), as a reader expects.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st
