"""Owner-only files and folders: secrets written 0600, the data folder kept 0700.

``write_secret_file`` creates a secret (an API key, an HMAC key) with mode 0600 in the
``open`` call itself, so there is no moment at which it exists with the process's default
(umask) permissions and holds the secret; an existing file is truncated and set to 0600
too (``fchmod``), whatever its mode was.

The data folder of the bundled stack and the pipeline holds secrets in its databases too
(the wallet, the collection keys of the audit store, the API's accounts), so the whole
folder is owner-only (docs/security.md): ``make_private_dir`` creates a folder 0700 (or
tightens an existing one), ``tighten_tree`` makes every folder under it 0700 and every
file 0600 and returns what it changed (``ModeChange``), so the caller can say so, and
``create_private_file`` creates a database file 0600 before SQLite does, and
``OWNER_ONLY_UMASK`` is the umask under which the ``notary`` command creates files
(SQLite's ``-wal`` and ``-shm`` files, Prefect's database and logs included).

Shared by the bundled stack (``ledger.stack``: ``api-key``, ``callback-secret``,
``rpc-credentials``, ``wallet-passphrase``) and any other writer of secrets; it is file
I/O, so it stays out of the pure ``ledger.core``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "OWNER_ONLY_UMASK",
    "PRIVATE_DIR_MODE",
    "SECRET_FILE_MODE",
    "ModeChange",
    "create_private_file",
    "make_private_dir",
    "tighten_file",
    "tighten_tree",
    "write_secret_file",
]

#: Read and write for the owner only.
SECRET_FILE_MODE = 0o600
#: A folder only its owner can list, enter or change.
PRIVATE_DIR_MODE = 0o700
#: The umask that gives new files 0600 and new folders 0700 (group and others: nothing).
OWNER_ONLY_UMASK = 0o077


def write_secret_file(path: Path, secret: bytes) -> Path:
    """Write ``secret`` and a newline to ``path`` with mode 0600 (created or replaced).

    Args:
        path: the file; its folder must exist.
        secret: the raw bytes to keep (an ASCII key as ``key.encode()``).

    Returns:
        ``path``.

    Raises:
        OSError: the folder is missing or not writable, the disk is full, ...
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), SECRET_FILE_MODE)  # an existing file keeps its old mode
        handle.write(secret + b"\n")
    return path


@dataclass(frozen=True)
class ModeChange:
    """One file or folder whose permission bits ``tighten_tree`` changed.

    Attributes:
        path: the file or folder.
        before: its permission bits before (``stat.S_IMODE``), e.g. ``0o644``.
        after: its permission bits now (0600 for a file, 0700 for a folder).
    """

    path: Path
    before: int
    after: int

    def __str__(self) -> str:
        return f"{self.path} {self.before:04o} -> {self.after:04o}"


def create_private_file(path: Path) -> bool:
    """Create ``path`` empty with mode 0600 unless it exists; True when created.

    For a database about to be created by a library that would use the process's umask
    (SQLite gives its ``-wal`` and ``-shm`` files the mode of the database file).

    Raises:
        OSError: the folder is missing or not writable.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SECRET_FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def make_private_dir(path: Path) -> list[ModeChange]:
    """Create ``path`` (and missing parents) and make ``path`` itself mode 0700.

    Parents created on the way get the process's usual mode (they are not the data
    folder). An existing folder is tightened to 0700 when it is more open.

    Returns:
        the change made to an existing folder (empty when it was new or already 0700).

    Raises:
        OSError: the folder cannot be created or is not the caller's to change.
    """
    existed = path.is_dir()
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    change = _tighten(path, PRIVATE_DIR_MODE)
    return [change] if change is not None and existed else []


def tighten_tree(root: Path) -> list[ModeChange]:
    """Make ``root`` and every folder below it 0700 and every regular file 0600.

    Symbolic links are neither followed nor changed (a link's target is not the folder's
    file); sockets and other special files are left as they are.

    Returns:
        every change made, ``root`` first then depth first (empty when all was tight).

    Raises:
        OSError: a file is not the caller's to change.
    """
    changes = [c for c in [_tighten(root, PRIVATE_DIR_MODE)] if c is not None]
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs) + sorted(files):
            path = Path(folder, name)
            info = path.lstat()
            if stat.S_ISDIR(info.st_mode):
                change = _tighten(path, PRIVATE_DIR_MODE, info)
            elif stat.S_ISREG(info.st_mode):
                change = _tighten(path, SECRET_FILE_MODE, info)
            else:
                continue
            if change is not None:
                changes.append(change)
    return changes


def tighten_file(path: Path, mode: int = SECRET_FILE_MODE) -> ModeChange | None:
    """Set ``path``'s permission bits to ``mode`` (0600) when they differ.

    Returns:
        the change made, or None when the bits were already ``mode``.

    Raises:
        FileNotFoundError: no such file. OSError: not the caller's to change.
    """
    return _tighten(path, mode)


def _tighten(path: Path, mode: int, info: os.stat_result | None = None) -> ModeChange | None:
    """Set ``path``'s permission bits to ``mode`` when they differ; the change or None."""
    before = stat.S_IMODE((info or path.lstat()).st_mode)
    if before == mode:
        return None
    path.chmod(mode)
    return ModeChange(path, before, mode)
