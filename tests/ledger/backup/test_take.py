"""``take_backup``: online copies of live WAL stores, secrets with their modes, a manifest.

The stores are copied while another thread keeps writing to them: every row committed
before the backup began is in the copy, the writer is never refused, and its longest
commit during the backup is measured beside the longest before it (the same run's
baseline).
"""

from __future__ import annotations

import json
import stat
import threading
import time
from pathlib import Path

import pytest

from ledger.backup import (
    MANIFEST_NAME,
    NotSqlite,
    StoreSpec,
    TargetNotEmpty,
    read_manifest,
    secret_files,
    take_backup,
    verify_files,
)
from ledger.core.clock import ManualClock
from tests.ledger.backup.conftest import NAMES, DataFolder, insert, open_store, row_numbers


def test_a_backup_holds_every_store_and_secret_with_a_manifest(
    folder: DataFolder, tmp_path: Path
) -> None:
    target = tmp_path / "backup"
    report = take_backup(
        folder.stores(), target, data_dir=folder.root, clock=ManualClock(1_700_000_000.0)
    )
    manifest = report.manifest
    assert [s.store for s in manifest.stores] == list(NAMES)
    assert [s.path for s in manifest.secrets] == ["api-key", "rpc-credentials"]
    assert manifest.created_at == "2023-11-14T22:13:20Z"
    assert set(manifest.versions) == {"notary", "sqlite", "python"}
    for record in manifest.stores:
        assert record.quick_check == "ok" and record.user_version == 7
        assert record.facts == {"rows": 50}
        assert record.copy_s is not None and record.copy_s >= 0
        assert row_numbers(target / record.path) == set(range(50))
    assert stat.S_IMODE((target / "api-key").stat().st_mode) == 0o600
    assert (target / "api-key").read_bytes() == b"key-material\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    assert not (target / "prefect-api-url").exists()
    assert not list(target.rglob("*.part")) and not list(target.rglob("*-wal"))
    on_disk = json.loads((target / MANIFEST_NAME).read_text())
    assert on_disk["manifest_sha256"] == report.digest == manifest.digest()
    assert read_manifest(target) == manifest
    verify_files(target, manifest)


def test_copy_under_write_load_keeps_every_committed_row_without_blocking(
    folder: DataFolder, tmp_path: Path
) -> None:
    conn = open_store(folder.path("first"))
    committed: list[tuple[int, float, float]] = []  # row, commit start, commit end
    stop = threading.Event()

    def writer() -> None:
        n = 1000
        while not stop.is_set():
            started = time.perf_counter()
            insert(conn, n, size=2000)
            committed.append((n, started, time.perf_counter()))
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(committed) < 200:
            time.sleep(0.01)
        began = time.perf_counter()
        report = take_backup(folder.stores(), tmp_path / "backup", data_dir=folder.root)
        ended = time.perf_counter()
        while not any(start > ended for _n, start, _end in committed):
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join()
        conn.close()
    before = {n for n, _start, end in committed if end < began}
    copied = row_numbers(tmp_path / "backup" / "first" / "first.sqlite")
    assert before <= copied
    assert copied <= {n for n, _start, _end in committed} | set(range(50))
    during = [end - start for _n, start, end in committed if start < ended and end > began]
    baseline = [end - start for _n, start, end in committed if end < began]
    record = report.manifest.store("first")
    assert record is not None and record.quick_check == "ok"
    print(
        f"\nbackup {ended - began:.3f} s (snapshot held {record.copy_s} s), "
        f"{len(during)} commits during it, longest {max(during) * 1000:.1f} ms; "
        f"longest before it {max(baseline) * 1000:.1f} ms over {len(baseline)} commits"
    )
    assert during, "the writer committed nothing during the backup: it was blocked"


def test_a_target_that_holds_files_is_refused_before_anything_is_written(
    folder: DataFolder, tmp_path: Path
) -> None:
    target = tmp_path / "backup"
    target.mkdir()
    (target / "old").write_text("x")
    with pytest.raises(TargetNotEmpty):
        take_backup(folder.stores(), target, data_dir=folder.root)
    assert [p.name for p in target.iterdir()] == ["old"]


def test_a_postgresql_store_is_refused_or_skipped(folder: DataFolder, tmp_path: Path) -> None:
    url = "postgresql+psycopg://notary:hunter2@db.example:5432/audit"
    stores = [StoreSpec.from_url("audit", "audit.sqlite", url), *folder.stores()]
    with pytest.raises(NotSqlite, match="pg_dump") as refused:
        take_backup(stores, tmp_path / "refused", data_dir=folder.root)
    assert "hunter2" not in str(refused.value)
    assert not (tmp_path / "refused").exists()
    report = take_backup(stores, tmp_path / "backup", data_dir=folder.root, skip_external=True)
    (skipped,) = report.manifest.skipped
    assert skipped.name == "audit" and "hunter2" not in skipped.location
    assert [s.store for s in report.manifest.stores] == list(NAMES)


def test_a_store_without_a_file_is_listed_as_absent(folder: DataFolder, tmp_path: Path) -> None:
    missing = StoreSpec.sqlite("later", "later/later.sqlite", folder.root / "later" / "x.sqlite")
    report = take_backup([*folder.stores(), missing], tmp_path / "backup", data_dir=folder.root)
    assert report.manifest.absent == ["later"]
    assert not (folder.root / "later").exists()  # the backup created nothing there


def test_secret_files_are_owner_only_regular_files_at_the_top(folder: DataFolder) -> None:
    (folder.root / "link").symlink_to(folder.root / "api-key")
    (folder.root / ".hidden").write_bytes(b"x")
    (folder.root / ".hidden").chmod(0o600)
    audit = folder.root / "audit.sqlite"
    open_store(audit).close()
    audit.chmod(0o600)
    (folder.root / "audit.sqlite-wal").write_bytes(b"")
    (folder.root / "audit.sqlite-wal").chmod(0o600)
    stores = [StoreSpec.sqlite("audit", "audit.sqlite", audit)]
    names = [p.name for p in secret_files(folder.root, stores)]
    assert names == ["api-key", "rpc-credentials"]


@pytest.mark.parametrize("name", ["/abs/x.sqlite", "../x.sqlite", "a/../../x", "", "a//b"])
def test_archive_names_stay_inside_the_backup(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="relative path"):
        StoreSpec.sqlite("x", name, tmp_path / "x.sqlite")
