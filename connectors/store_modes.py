"""The audit store's file is owner-only before it holds collection keys.

Each collection's key (``connectors.audit.collections``) is the secret every document's
commitment nonce is derived from; it is kept in the audit store, which is therefore
owner-only (docs/security.md): on SQLite, ``owner_only_sqlite(url)`` makes the database
file and its ``-wal``, ``-shm`` and ``-journal`` files mode 0600 when they are more open
(an existing store made under umask 022 is 0644) and returns what it changed, which the
audit store logs as one WARNING line; a new store's file is created 0600 before SQLite
opens it (its side files then get the same mode). A server database (PostgreSQL) keeps its keys under
the server's own access control; an in-memory SQLite database has no file.

Raises ``StoreExposedError`` when a file cannot be made owner-only (another user's file):
the store is then not opened, so no key is written where others can read it.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url

from connectors.errors import ConnectorPackageError
from ledger.secret_file import SECRET_FILE_MODE, ModeChange, create_private_file, tighten_file

__all__ = ["StoreExposedError", "owner_only_sqlite", "sqlite_file"]

_SIDE_FILES = ("-wal", "-shm", "-journal")


class StoreExposedError(ConnectorPackageError, PermissionError):
    """The audit store's file is readable by others and cannot be made owner-only.

    Attributes:
        path: the file.
    """

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(
            f"the audit store {path} holds collection keys but is readable by other users "
            f"and cannot be made owner-only ({cause.strerror}): chmod 600 it, or use a "
            "store of your own"
        )
        self.path = path


def sqlite_file(url: str) -> Path | None:
    """The database file of a file-backed SQLite URL; None otherwise."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if database.startswith("file:"):
        return None  # a URI database (tests' shared memory): not a plain path
    return Path(database).expanduser()


def owner_only_sqlite(url: str) -> list[ModeChange]:
    """Make the SQLite audit store of ``url`` and its side files 0600 (module docstring).

    Returns:
        the changes made (empty when already owner-only, or not a file-backed SQLite URL).

    Raises:
        StoreExposedError: a file more open than 0600 whose mode cannot be changed.
    """
    path = sqlite_file(url)
    if path is None:
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    create_private_file(path)  # a new store is 0600 from the start, whatever the umask
    changes = []
    for file in [path, *(path.with_name(path.name + s) for s in _SIDE_FILES)]:
        try:
            change = tighten_file(file, SECRET_FILE_MODE)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreExposedError(file, exc) from exc
        if change is not None:
            changes.append(change)
    return changes
