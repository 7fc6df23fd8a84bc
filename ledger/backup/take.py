"""Taking a backup: an online copy of every store, in order, then the secrets and manifest.

Each SQLite store is copied with SQLite's online backup API
(https://www.sqlite.org/backup.html, ``sqlite3.Connection.backup``) in one step: the copy
reads one consistent snapshot of the database (a read transaction). The stores run in WAL
mode, where a reader never blocks a writer, so the services keep accepting writes while
their store is copied; ``copy_s`` in the manifest is how long that snapshot was held.

Each copy is taken at its own moment, one store after the other, in the order given
(``Stack.stores``): a store is copied before the stores it hands work to, so whatever a
copy says was handed on is in the later copies (README "Backups" explains the order).

Steps:

1. refuse, before writing anything, a target folder that is not empty
   (``TargetNotEmpty``) and a server-database store unless ``skip_external``
   (``NotSqlite``);
2. copy each SQLite store to ``<target>/<archive_name>.part``, check it
   (``PRAGMA quick_check``, ``user_version``, the store's facts) read-only, fsync it and
   rename it into place; a store without a file is listed as ``absent``;
3. copy the secret files with their modes;
4. write ``manifest.json`` last (``ledger.backup.manifest``).

The backup folder is created with mode 0700: it holds secrets.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sqlite3
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ledger.backup.errors import NotSqlite, TargetNotEmpty
from ledger.backup.layout import StoreSpec, secret_files
from ledger.backup.manifest import (
    Manifest,
    SecretRecord,
    SkippedStore,
    StoreRecord,
    file_sha256,
    fsync_path,
    write_manifest,
)
from ledger.core.clock import Clock, SystemClock

__all__ = ["BackupReport", "take_backup"]

_FOLDER_MODE = 0o700
_BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class BackupReport:
    """What ``take_backup`` wrote: the ``manifest`` and its ``digest`` (hex)."""

    manifest: Manifest
    digest: str


def take_backup(
    stores: Sequence[StoreSpec],
    target: Path,
    *,
    data_dir: Path,
    skip_external: bool = False,
    clock: Clock | None = None,
) -> BackupReport:
    """Copy ``stores`` (in this order) and the secret files of ``data_dir`` into ``target``.

    Args:
        stores: the stores, in copy order (module docstring).
        target: the backup folder: missing or empty.
        data_dir: the data folder whose top-level secret files are copied.
        skip_external: record server-database stores as skipped instead of refusing.
        clock: time source of ``created_at`` (the system clock by default).

    Raises:
        TargetNotEmpty: ``target`` holds files.
        NotSqlite: a store is a server database and ``skip_external`` is False.
        sqlite3.Error, OSError: a store could not be read or the copy written (the
            unfinished folder has no manifest).
    """
    started = time.perf_counter()
    created_at = datetime.fromtimestamp((clock or SystemClock()).now(), UTC)
    _check_target(target)
    external = [s for s in stores if s.path is None]
    if external and not skip_external:
        raise NotSqlite(external[0].name, external[0].location)
    target.mkdir(mode=_FOLDER_MODE, parents=True, exist_ok=True)
    os.chmod(target, _FOLDER_MODE)
    copied: list[StoreRecord] = []
    absent: list[str] = []
    for spec in stores:
        if spec.path is None:
            continue
        if not spec.path.is_file():
            absent.append(spec.name)
            continue
        copied.append(_copy_store(spec, spec.path, target))
    secrets = [_copy_secret(path, target) for path in secret_files(data_dir, stores)]
    manifest = Manifest(
        created_at=created_at.isoformat().replace("+00:00", "Z"),
        duration_s=round(time.perf_counter() - started, 3),
        versions=_versions(),
        stores=copied,
        secrets=secrets,
        absent=absent,
        skipped=[SkippedStore(name=s.name, location=s.location) for s in external],
    )
    return BackupReport(manifest, write_manifest(target, manifest))


def _check_target(target: Path) -> None:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise TargetNotEmpty(target, ": a backup goes into a new or empty folder")


def _copy_store(spec: StoreSpec, source: Path, target: Path) -> StoreRecord:
    """Online copy of one store (steps 2 of the module docstring)."""
    final = target / spec.archive_name
    final.parent.mkdir(mode=_FOLDER_MODE, parents=True, exist_ok=True)
    part = final.with_name(final.name + ".part")
    # mode=rw: a store that vanished is an error, not a new empty database
    src = sqlite3.connect(f"file:{source}?mode=rw", uri=True, timeout=_BUSY_TIMEOUT_S)
    try:
        dst = sqlite3.connect(part)
        try:
            held = time.perf_counter()
            src.backup(dst)  # one step: one read snapshot of the whole database
            copy_s = time.perf_counter() - held
        finally:
            dst.close()
    finally:
        src.close()
    checks = _inspect(part, spec)
    fsync_path(part)
    part.replace(final)
    fsync_path(final.parent)
    return StoreRecord(
        path=spec.archive_name,
        size=final.stat().st_size,
        sha256=file_sha256(final),
        mode=_mode_text(source),
        store=spec.name,
        copy_s=round(copy_s, 4),
        **checks,
    )


def _inspect(copy: Path, spec: StoreSpec) -> dict[str, Any]:
    """``quick_check``, ``user_version`` and the facts of a copy, read without writing."""
    conn = sqlite3.connect(f"file:{copy}?immutable=1", uri=True)
    try:
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        facts = {name: conn.execute(sql).fetchone()[0] for name, sql in spec.facts.items()}
    finally:
        conn.close()
    return {"quick_check": str(check), "user_version": int(version), "facts": facts}


def _copy_secret(path: Path, target: Path) -> SecretRecord:
    """Copy one secret file with its mode (created owner-only, never wider on the way)."""
    mode = stat.S_IMODE(path.lstat().st_mode)
    data = path.read_bytes()
    destination = target / path.name
    fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fchmod(handle.fileno(), mode)
        os.fsync(handle.fileno())
    return SecretRecord(
        path=path.name, size=len(data), sha256=file_sha256(destination), mode=f"{mode:04o}"
    )


def _mode_text(path: Path) -> str:
    return f"{stat.S_IMODE(path.stat().st_mode):04o}"


def _versions() -> dict[str, str]:
    try:
        notary = importlib.metadata.version("notary")
    except importlib.metadata.PackageNotFoundError:
        notary = "unknown"
    return {
        "notary": notary,
        "sqlite": sqlite3.sqlite_version,
        "python": platform.python_version(),
    }
