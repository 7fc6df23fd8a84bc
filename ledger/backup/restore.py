"""Restoring a backup into a data folder, after checking everything that can be checked.

Steps (nothing is written before step 5):

1. read the manifest and check its digest (``read_manifest``; against the digest kept
   elsewhere when one is given);
2. check every listed file's size and SHA-256 (``verify_files``);
3. match each store of the backup with a destination of the restoring configuration
   (``StoreSpec`` by name; a store the configuration keeps in a server database, or does
   not know, is refused);
4. refuse a data folder in use: a destination store that another process holds open
   (``in_use``) is ``DataFolderInUse``, even with ``force``; refuse a data folder, or a
   destination outside it, that already holds files unless ``force``
   (``TargetNotEmpty``);
5. for each store: remove its SQLite side files (``-wal``, ``-shm``, ``-journal``) and
   its derived files (a stale write-ahead log would be replayed into the restored file),
   copy the file to ``<destination>.part`` with its recorded mode while hashing it again,
   fsync, and rename it into place; a store the backup lists as ``absent`` is removed;
   then the secret files, with their modes.

The folders created are owner-only (0700): the data folder holds secrets.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger.backup.errors import (
    DataFolderInUse,
    ManifestError,
    NotSqlite,
    StoreMissing,
    TargetNotEmpty,
)
from ledger.backup.layout import StoreSpec
from ledger.backup.manifest import (
    FileRecord,
    Manifest,
    fsync_path,
    read_manifest,
    verify_files,
)

__all__ = ["RestoreReport", "in_use", "restore_backup"]

_SIDE_FILES = ("-wal", "-shm", "-journal")
_CHUNK = 1 << 20
_FOLDER_MODE = 0o700


@dataclass(frozen=True)
class RestoreReport:
    """What ``restore_backup`` did: the checked ``manifest``, its ``digest``, the
    ``restored`` files (destinations) and the ``removed`` stores (absent from the backup,
    present in the data folder before)."""

    manifest: Manifest
    digest: str
    restored: list[Path]
    removed: list[str]


def restore_backup(
    source: Path,
    stores: Sequence[StoreSpec],
    *,
    data_dir: Path,
    force: bool = False,
    expected_sha256: str | None = None,
) -> RestoreReport:
    """Restore the backup in ``source`` into ``data_dir`` (module docstring).

    Args:
        source: the backup folder (with ``manifest.json``).
        stores: the restoring configuration's stores (their destinations), by name.
        data_dir: where the secret files go (and the stores, in the default layout).
        force: restore over a data folder that holds files (never over one in use).
        expected_sha256: the manifest digest kept when the backup was taken.

    Raises:
        ManifestError: the manifest or a file does not check out.
        NotSqlite: the configuration keeps a backed-up store in a server database.
        StoreMissing: the backup holds a store the configuration does not know.
        DataFolderInUse: a destination store is open in another process.
        TargetNotEmpty: ``data_dir`` or a destination holds files and ``force`` is False.
        OSError: a file could not be written (the folder may then be partly restored:
            run again with ``force``).
    """
    manifest = read_manifest(source, expected_sha256=expected_sha256)
    verify_files(source, manifest)
    plan = _destinations(manifest, stores)
    _check_free(plan, data_dir, force=force)
    data_dir.mkdir(mode=_FOLDER_MODE, parents=True, exist_ok=True)
    restored, removed = [], []
    for record, spec in plan:
        assert spec.path is not None  # _destinations refuses the others
        existed = _clear(spec)
        if record is not None:
            restored.append(_place(source / record.path, spec.path, record))
        elif existed:
            removed.append(spec.name)
    restored += [_place(source / s.path, data_dir / s.path, s) for s in manifest.secrets]
    return RestoreReport(manifest, manifest.digest(), restored, removed)


def in_use(path: Path) -> bool:
    """Whether another connection has the SQLite database ``path`` open.

    In WAL mode every open connection holds a shared lock on the database file, so an
    exclusive lock (``locking_mode=EXCLUSIVE`` then ``BEGIN EXCLUSIVE``, not waiting) is
    refused while any other process has it open, busy or idle
    (https://www.sqlite.org/wal.html, https://www.sqlite.org/pragma.html#pragma_locking_mode).
    """
    conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0, isolation_level=None)
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return True
        raise
    except sqlite3.DatabaseError:
        return False  # not a database: nothing has it open as one
    finally:
        conn.close()
    return False


def _destinations(
    manifest: Manifest, stores: Sequence[StoreSpec]
) -> list[tuple[FileRecord | None, StoreSpec]]:
    """``(record or None when absent, destination spec)`` of every store to touch."""
    by_name = {spec.name: spec for spec in stores}
    plan: list[tuple[FileRecord | None, StoreSpec]] = []
    wanted: list[tuple[FileRecord | None, str]] = [(r, r.store) for r in manifest.stores]
    wanted += [(None, name) for name in manifest.absent]
    for record, name in wanted:
        spec = by_name.get(name)
        if spec is None:
            raise StoreMissing(name)
        if spec.path is None:
            raise NotSqlite(spec.name, spec.location)
        plan.append((record, spec))
    return plan


def _check_free(
    plan: list[tuple[FileRecord | None, StoreSpec]], data_dir: Path, *, force: bool
) -> None:
    """Step 4 of the module docstring."""
    destinations = [spec.path for _record, spec in plan if spec.path is not None]
    for path in destinations:
        if path.is_file() and in_use(path):
            raise DataFolderInUse(path)
    if force:
        return
    if data_dir.exists() and any(data_dir.iterdir()):
        raise TargetNotEmpty(data_dir, ": restore into a new data folder, or use --force")
    for path in destinations:
        if path.exists():
            raise TargetNotEmpty(path, ": restore into a new data folder, or use --force")


def _clear(spec: StoreSpec) -> bool:
    """Remove the store's file, side files and derived files; whether the file existed."""
    assert spec.path is not None
    existed = spec.path.exists()
    for side in (spec.path, *(spec.path.with_name(spec.path.name + s) for s in _SIDE_FILES)):
        side.unlink(missing_ok=True)
    for derived in spec.derived:
        derived.unlink(missing_ok=True)
    return existed


def _place(source: Path, destination: Path, record: FileRecord) -> Path:
    """Copy ``source`` to ``destination`` with the record's mode, checking its SHA-256 on
    the way (the backup may change between the check and the copy)."""
    destination.parent.mkdir(mode=_FOLDER_MODE, parents=True, exist_ok=True)
    part = destination.with_name(destination.name + ".part")
    part.unlink(missing_ok=True)
    digest = hashlib.sha256()
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out, source.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        os.fchmod(out.fileno(), record.mode_bits)
        os.fsync(out.fileno())
    if digest.hexdigest() != record.sha256:
        part.unlink()
        raise ManifestError("changed while it was being restored", path=source)
    part.replace(destination)
    fsync_path(destination.parent)
    return destination
