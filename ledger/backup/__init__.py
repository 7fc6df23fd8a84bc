"""Consistent online copies of the data folder's stores, and their restoration.

``notary backup DIR`` and ``notary restore DIR`` (``flows.cli.commands.backup``) are thin
printers around this package; the stores, their order and their destinations come from
the composition root (``ledger.stack.Stack.stores``, plus the pipeline's audit store).
File-level only: it imports no service.

- ``ledger.backup.layout``: ``StoreSpec`` (one store), the secret files of a data folder;
- ``ledger.backup.take``: ``take_backup`` (SQLite online backup API, store by store);
- ``ledger.backup.manifest``: ``manifest.json`` (sizes, SHA-256, versions, facts, digest);
- ``ledger.backup.restore``: ``restore_backup`` (checks first, then copies with modes);
- ``ledger.backup.errors``: the error tree.
"""

from ledger.backup.errors import (
    BackupError,
    DataFolderInUse,
    ManifestError,
    NotSqlite,
    StoreMissing,
    TargetNotEmpty,
)
from ledger.backup.layout import StoreSpec, secret_files, sqlite_location
from ledger.backup.manifest import MANIFEST_NAME, Manifest, read_manifest, verify_files
from ledger.backup.restore import RestoreReport, in_use, restore_backup
from ledger.backup.take import BackupReport, take_backup

__all__ = [
    "MANIFEST_NAME",
    "BackupError",
    "BackupReport",
    "DataFolderInUse",
    "Manifest",
    "ManifestError",
    "NotSqlite",
    "RestoreReport",
    "StoreMissing",
    "StoreSpec",
    "TargetNotEmpty",
    "in_use",
    "read_manifest",
    "restore_backup",
    "secret_files",
    "sqlite_location",
    "take_backup",
    "verify_files",
]
