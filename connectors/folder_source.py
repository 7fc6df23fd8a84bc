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

Reading a listed file safely is ``connectors.folder_files``.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import logging
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "DEFAULT_IGNORE_PATTERNS",
    "Refusal",
    "RefusalHandler",
    "ScanEntry",
    "SkipHandler",
    "display_path",
    "ignore_matcher",
    "is_storable_path",
    "report_refusal",
    "scan",
    "scan_refusing",
    "scan_root",
    "special_file_reason",
    "source_name",
]

logger = logging.getLogger(__name__)

DEFAULT_IGNORE_PATTERNS: tuple[str, ...] = (".*", "*.part", "~$*", "*.swp", "*.tmp")

SkipHandler = Callable[[str, str], None]
"""``on_skip(relative_path, reason)``: an entry ``scan`` refused. ``relative_path`` is
printable (see ``display_path``); ``reason`` is one human sentence."""

# ``open`` checks the effective user; ``access`` the real one unless told otherwise.
_EFFECTIVE_IDS = os.access in os.supports_effective_ids

_SPECIAL_FILES = {
    stat.S_IFLNK: "a symbolic link (never followed)",
    stat.S_IFIFO: "a FIFO (named pipe), not a regular file",
    stat.S_IFSOCK: "a socket, not a regular file",
    stat.S_IFCHR: "a character device, not a regular file",
    stat.S_IFBLK: "a block device, not a regular file",
}


def special_file_reason(kind: int) -> str:
    """Why a file of type ``kind`` (``stat.S_IFMT`` of its mode) is not read, one phrase
    (``"a FIFO (named pipe), not a regular file"``)."""
    return _SPECIAL_FILES.get(kind, "not a regular file")


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
        report.note("special file", relative, special_file_reason(kind))
        return None
    if not os.access(entry.path, os.R_OK, effective_ids=_EFFECTIVE_IDS):
        report.warn("unreadable file", relative, "permission denied")
        return None
    return ScanEntry(relative, entry.path, st.st_size, st.st_mtime)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is too long for the file system"
    return exc.strerror or str(exc)
