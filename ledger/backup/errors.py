"""Errors of ``notary backup`` and ``notary restore`` (``ledger.backup``).

Exception tree::

    BackupError (Exception)
    ├── NotSqlite            a store lives in a server database (PostgreSQL): not copied
    │                        here; .name, .location (its URL without password)
    ├── TargetNotEmpty       the backup folder, or the data folder to restore into,
    │                        already holds files (restore: unless forced); .path
    ├── DataFolderInUse      a service or another process has a store of the data folder
    │                        open; nothing was changed; .path
    ├── StoreMissing         ``restore`` met a store it has no destination for; .name
    └── ManifestError        the backup's manifest is unreadable, not ours, or disagrees
                             with itself or with a file (tampering, corruption); .path
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "BackupError",
    "DataFolderInUse",
    "ManifestError",
    "NotSqlite",
    "StoreMissing",
    "TargetNotEmpty",
]


class BackupError(Exception):
    """Base of the backup and restore errors; nothing was copied over a live store."""


class NotSqlite(BackupError):
    """A store is a server database (PostgreSQL): back it up with the server's own tools.

    Attributes:
        name: the store (``"audit"``, ``"api"``).
        location: its URL, password hidden.
    """

    def __init__(self, name: str, location: str) -> None:
        super().__init__(
            f"the {name} store is not an SQLite file ({location}): back it up with the "
            "database's own tools (PostgreSQL: pg_dump, or pg_basebackup with WAL archiving "
            "for point-in-time recovery), or skip it with --skip-external"
        )
        self.name = name
        self.location = location


class TargetNotEmpty(BackupError):
    """The folder to write into already holds files.

    Attributes:
        path: that folder (or file).
    """

    def __init__(self, path: Path, hint: str = "") -> None:
        super().__init__(f"{path} is not empty{hint}")
        self.path = path


class DataFolderInUse(BackupError):
    """A store of the data folder is open in another process (a running service).

    Attributes:
        path: the store's file.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} is in use by a running process: stop the services first")
        self.path = path


class StoreMissing(BackupError):
    """The backup holds a store the restoring configuration has no place for.

    Attributes:
        name: the store.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"the backup holds a store named {name!r}, unknown here")
        self.name = name


class ManifestError(BackupError):
    """The manifest is missing, malformed, or does not match itself or the files.

    Attributes:
        path: the manifest or the file that does not match it.
    """

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
