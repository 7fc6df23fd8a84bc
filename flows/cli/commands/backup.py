"""``notary backup DIR`` and ``notary restore DIR``: copies of every store, while they run.

``backup`` copies the audit store, the publishing API's database, the anchoring service's
two stores, the node's and the wallet's, in that order (``ledger.stack.Stack.stores``
says why), with SQLite's online backup API: the services keep running and keep accepting
writes. It then copies the owner-only secret files of the data folder and writes
``manifest.json`` (sizes, SHA-256, versions, the node's height, times) and prints the
manifest's digest. A store kept in PostgreSQL (``NOTARY_AUDIT_DB_URL``,
``NOTARY_API_DATABASE_URL``) is refused, or skipped with ``--skip-external``: back it up
with PostgreSQL's own tools (README "Backups").

``restore`` checks the manifest and every file, refuses a data folder in use (even with
``--force``) or holding files (unless ``--force``), then puts every store and secret file
in place with its mode. The stores go where this configuration keeps them.

Exit codes (``ExitCode``): 0 done; 1 the backup does not check out (edited or corrupted
manifest or file: nothing restored); 2 bad usage (a folder not empty, a data folder in
use, a PostgreSQL store, no data folder); 3 a store could not be read or a file written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from flows.cli.common import DataDir, console, fail
from flows.cli.exit_codes import ExitCode
from flows.settings import PipelineSettings

if TYPE_CHECKING:
    from ledger.backup import BackupReport, RestoreReport, StoreSpec

__all__ = ["backup", "register", "restore"]


def register(app: typer.Typer) -> None:
    """Add the ``backup`` and ``restore`` commands to ``app``."""
    app.command("backup")(backup)
    app.command("restore")(restore)


def stores_of(data_dir: Path) -> list[StoreSpec]:
    """Every store of the data folder in copy order: the audit store, then the stack's."""
    from ledger.backup import StoreSpec
    from ledger.stack import Stack, StackSettings

    audit = PipelineSettings(data_dir=data_dir).audit_url
    stack = Stack(StackSettings(data_dir=data_dir))
    return [StoreSpec.from_url("audit", "audit.sqlite", audit), *stack.stores()]


def backup(
    folder: Annotated[Path, typer.Argument(help="New (or empty) folder to write the backup to.")],
    data_dir: DataDir = Path(".notary"),
    skip_external: Annotated[
        bool,
        typer.Option(
            "--skip-external",
            help="Skip stores kept in PostgreSQL (back them up with pg_dump) instead of refusing.",
        ),
    ] = False,
) -> None:
    """Copy every store of the data folder (services may keep running) and its secrets."""
    from ledger.backup import BackupError, take_backup

    if not data_dir.is_dir():
        fail(f"no data folder at {data_dir}", ExitCode.USAGE)
    try:
        report = take_backup(
            stores_of(data_dir), folder, data_dir=data_dir, skip_external=skip_external
        )
    except BackupError as exc:
        fail(str(exc), ExitCode.USAGE)
    except (OSError, sqlite3.Error) as exc:
        fail(f"the backup failed: {exc}", ExitCode.UNREACHABLE)
    _print_backup(report, folder)


def restore(
    folder: Annotated[Path, typer.Argument(help="The backup folder (with manifest.json).")],
    data_dir: DataDir = Path(".notary"),
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Restore over a data folder that holds files (never one in use)."
        ),
    ] = False,
    manifest_sha256: Annotated[
        str | None,
        typer.Option(
            "--manifest-sha256", help="The manifest digest `notary backup` printed: check it."
        ),
    ] = None,
) -> None:
    """Check a backup, then put its stores and secret files into the data folder."""
    from ledger.backup import BackupError, ManifestError, restore_backup

    try:
        report = restore_backup(
            folder,
            stores_of(data_dir),
            data_dir=data_dir,
            force=force,
            expected_sha256=manifest_sha256,
        )
    except ManifestError as exc:
        fail(f"the backup does not check out, nothing restored: {exc}", ExitCode.INCOMPLETE)
    except BackupError as exc:
        fail(str(exc), ExitCode.USAGE)
    except (OSError, sqlite3.Error) as exc:
        fail(f"the restore failed (run it again with --force): {exc}", ExitCode.UNREACHABLE)
    _print_restore(report, data_dir)


def _print_backup(report: BackupReport, folder: Path) -> None:
    manifest = report.manifest
    table = Table("store", "file", "bytes", "snapshot held (s)", "check")
    for record in manifest.stores:
        table.add_row(
            record.store, record.path, f"{record.size:,}", f"{record.copy_s}", record.quick_check
        )
    console.print(table)
    node = manifest.store("node")
    if node is not None:
        console.print(f"node height {node.facts.get('height')}")
    console.print(
        f"{len(manifest.secrets)} secret files: {', '.join(s.path for s in manifest.secrets)}"
    )
    for skipped in manifest.skipped:
        console.print(f"skipped {skipped.name} ({skipped.location}): back it up with pg_dump")
    if manifest.absent:
        console.print(f"no file yet for: {', '.join(manifest.absent)}")
    console.print(f"backup written to {folder} in {manifest.duration_s} s")
    console.print(f"manifest sha256 {report.digest}", highlight=False)


def _print_restore(report: RestoreReport, data_dir: Path) -> None:
    node = report.manifest.store("node")
    height = node.facts.get("height") if node is not None else None
    console.print(
        f"restored {len(report.restored)} files into {data_dir} from the backup of "
        f"{report.manifest.created_at} (node height {height})"
    )
    if report.removed:
        console.print(f"removed (absent from the backup): {', '.join(report.removed)}")
    for skipped in report.manifest.skipped:
        console.print(f"not in this backup: {skipped.name} ({skipped.location})")
    console.print(f"manifest sha256 {report.digest}", highlight=False)
