"""What a backup holds: the stores of a data folder (in copy order) and its secret files.

A ``StoreSpec`` names one store: where it lives now (``path``, None for a server database
such as PostgreSQL, which a file copy cannot take), where its copy goes inside the backup
(``archive_name``, the data folder's own layout: ``node/node.sqlite``), the SQL facts
worth recording in the manifest (``facts``: the node's height), and the files derived from
it that a restore removes (``derived``: the node's replay filter snapshot, rebuilt from
the journal at start-up). The composition root builds the list (``ledger.stack``
``Stack.stores``, plus the pipeline's audit store) in the order that keeps the copies
consistent with each other (README "Backups").

Secret files are the regular files at the top of the data folder that only their owner
may read (``api-key``, ``callback-secret``, ``rpc-credentials``, ...): they are copied
with their modes. Anything else there (``prefect/``, ``reports/``, ``prefect-api-url``) is
not part of a backup.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

__all__ = ["StoreSpec", "check_archive_name", "secret_files", "sqlite_location"]

#: Names a secret file may have (no folder, no leading dot): a manifest naming anything
#: else is refused before anything is written.
SECRET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class StoreSpec:
    """One store of a data folder (module docstring).

    Attributes:
        name: short unique name (``"node"``).
        archive_name: relative POSIX path of its copy in a backup (``"node/node.sqlite"``).
        path: the SQLite file; None when the store is a server database.
        location: where it lives, for messages (the path, or the URL without password).
        facts: name -> SQL query of one value, read from the copy (``{"height": ...}``).
        derived: files computed from the store, removed when it is restored.
    """

    name: str
    archive_name: str
    path: Path | None
    location: str
    facts: Mapping[str, str] = field(default_factory=dict)
    derived: tuple[Path, ...] = ()

    @classmethod
    def from_url(
        cls,
        name: str,
        archive_name: str,
        url: str,
        *,
        facts: Mapping[str, str] | None = None,
    ) -> StoreSpec:
        """A store given by its SQLAlchemy URL (``sqlite:///...`` or a server database)."""
        path, location = sqlite_location(url)
        return cls(name, check_archive_name(archive_name), path, location, facts or {})

    @classmethod
    def sqlite(
        cls,
        name: str,
        archive_name: str,
        path: Path,
        *,
        facts: Mapping[str, str] | None = None,
        derived: tuple[Path, ...] = (),
    ) -> StoreSpec:
        """A store in the SQLite file ``path``."""
        return cls(name, check_archive_name(archive_name), path, str(path), facts or {}, derived)


def sqlite_location(url: str) -> tuple[Path | None, str]:
    """``(file path or None, printable location)`` of an SQLAlchemy URL.

    The path is None for anything but a file-backed SQLite URL (PostgreSQL, an in-memory
    SQLite database); the location hides a password.

    Raises:
        ValueError: ``url`` is not an SQLAlchemy URL.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError("not a database URL") from exc
    location = parsed.render_as_string(hide_password=True)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None, location
    return Path(database).expanduser(), location


def check_archive_name(name: str) -> str:
    """``name`` when it is a normalized relative POSIX path below the backup folder.

    Raises:
        ValueError: absolute, with ``.`` or ``..`` parts, empty or not normalized.
    """
    pure = PurePosixPath(name)
    odd = pure.is_absolute() or str(pure) != name or not pure.parts
    if odd or any(p in ("", ".", "..") for p in pure.parts):
        raise ValueError(f"not a relative path inside a backup: {name!r}")
    return name


def secret_files(data_dir: Path, stores: Iterable[StoreSpec] = ()) -> list[Path]:
    """The owner-only regular files at the top of ``data_dir``, by name (module docstring).

    The files of ``stores`` (an audit store kept there) and SQLite's side files
    (``-wal``, ``-shm``, ``-journal``) are not secrets. Symlinks are not followed (a link
    is not a secret file of this folder).
    """
    if not data_dir.is_dir():
        return []
    taken = {s.path.resolve() for s in stores if s.path is not None}
    found = []
    for entry in sorted(data_dir.iterdir()):
        info = entry.lstat()
        owner_only = stat.S_IMODE(info.st_mode) & 0o077 == 0
        side_file = entry.name.endswith(_SQLITE_SIDE_FILES) or entry.resolve() in taken
        named = SECRET_NAME.fullmatch(entry.name) is not None
        if stat.S_ISREG(info.st_mode) and owner_only and named and not side_file:
            found.append(entry)
    return found
