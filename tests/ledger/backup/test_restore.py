"""``restore_backup``: checks first (manifest, files, the data folder), then files with modes.

Tampering: each edit of the manifest or of a file is caught before anything is written,
including a manifest rewritten with a fresh digest (caught by the digest kept at backup
time) and one naming a path outside the data folder.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from ledger.backup import (
    MANIFEST_NAME,
    DataFolderInUse,
    ManifestError,
    NotSqlite,
    StoreMissing,
    StoreSpec,
    TargetNotEmpty,
    in_use,
    restore_backup,
    take_backup,
)
from tests.ledger.backup.conftest import NAMES, DataFolder, insert, open_store, row_numbers


@pytest.fixture
def backup(folder: DataFolder, tmp_path: Path) -> tuple[Path, str]:
    target = tmp_path / "backup"
    return target, take_backup(folder.stores(), target, data_dir=folder.root).digest


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Relative path -> (mode, bytes) of every file under ``root``."""
    return {
        str(p.relative_to(root)): (stat.S_IMODE(p.stat().st_mode), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_restore_into_a_new_folder_gives_back_every_file_and_mode(
    folder: DataFolder, backup: tuple[Path, str], tmp_path: Path
) -> None:
    source, digest = backup
    fresh = DataFolder(tmp_path / "fresh")
    report = restore_backup(source, folder.stores(fresh.root), data_dir=fresh.root)
    assert report.digest == digest and report.removed == []
    restored = _tree(fresh.root)
    assert set(restored) == {
        "first/first.sqlite",
        "second/second.sqlite",
        "api-key",
        "rpc-credentials",
    }
    assert restored["api-key"] == (0o600, b"key-material\n")
    assert restored["rpc-credentials"][0] == 0o600
    for name in NAMES:
        assert row_numbers(fresh.path(name)) == set(range(50))
        mode = stat.S_IMODE(folder.path(name).stat().st_mode)
        assert restored[f"{name}/{name}.sqlite"][0] == mode
    assert stat.S_IMODE(fresh.root.stat().st_mode) == 0o700
    conn = open_store(fresh.path("first"))  # a restored store opens and takes writes
    insert(conn, 999)
    conn.close()


def test_a_folder_in_use_is_refused_even_with_force(
    folder: DataFolder, backup: tuple[Path, str]
) -> None:
    source, _digest = backup
    conn = open_store(folder.path("second"))  # a service holding its store open, idle
    try:
        assert in_use(folder.path("second"))
        before = _tree(folder.root)
        with pytest.raises(DataFolderInUse) as refused:
            restore_backup(source, folder.stores(), data_dir=folder.root, force=True)
        assert refused.value.path == folder.path("second")
        assert _tree(folder.root) == before
    finally:
        conn.close()
    assert not in_use(folder.path("second"))


def _hold_open(path: str, ready: Any, release: Any) -> None:
    conn = open_store(Path(path))
    ready.set()
    release.wait(30)
    conn.close()


def test_a_store_open_in_another_process_is_in_use(folder: DataFolder) -> None:
    context = multiprocessing.get_context("spawn")
    ready, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_open, args=(str(folder.path("first")), ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        assert in_use(folder.path("first"))
    finally:
        release.set()
        holder.join(30)
    assert not in_use(folder.path("first"))


def test_a_non_empty_folder_needs_force_and_stale_side_files_go(
    folder: DataFolder, backup: tuple[Path, str]
) -> None:
    source, _digest = backup
    conn = open_store(folder.path("first"))
    for n in range(100, 120):
        insert(conn, n)
    conn.close()
    with pytest.raises(TargetNotEmpty):
        restore_backup(source, folder.stores(), data_dir=folder.root)
    stale_wal = folder.path("first").with_name("first.sqlite-wal")
    stale_wal.write_bytes(b"garbage that must not be replayed")
    cache = folder.path("first").with_suffix(".cache")
    cache.write_bytes(b"derived")
    restore_backup(source, folder.stores(), data_dir=folder.root, force=True)
    assert not stale_wal.exists() and not cache.exists()
    assert row_numbers(folder.path("first")) == set(range(50))


def test_a_store_absent_from_the_backup_is_removed_on_restore(
    folder: DataFolder, tmp_path: Path
) -> None:
    later = StoreSpec.sqlite("later", "later/later.sqlite", folder.root / "later" / "l.sqlite")
    source = tmp_path / "backup"
    take_backup([*folder.stores(), later], source, data_dir=folder.root)
    open_store(folder.root / "later" / "l.sqlite").close()
    report = restore_backup(source, [*folder.stores(), later], data_dir=folder.root, force=True)
    assert report.removed == ["later"]
    assert not (folder.root / "later" / "l.sqlite").exists()


def test_the_destination_must_be_a_known_sqlite_store(
    folder: DataFolder, backup: tuple[Path, str], tmp_path: Path
) -> None:
    source, _digest = backup
    fresh = DataFolder(tmp_path / "fresh")
    with pytest.raises(StoreMissing):
        restore_backup(source, folder.stores(fresh.root)[:1], data_dir=fresh.root)
    postgres = StoreSpec.from_url("second", "second/second.sqlite", "postgresql://h/db")
    with pytest.raises(NotSqlite):
        restore_backup(source, [folder.stores(fresh.root)[0], postgres], data_dir=fresh.root)
    assert not fresh.root.exists()


# -- tampering ----------------------------------------------------------------------------


def _edit_manifest(source: Path, edit: Callable[[dict[str, Any]], None], *, redigest: bool) -> None:
    path = source / MANIFEST_NAME
    document = json.loads(path.read_text())
    edit(document)
    if redigest:
        body = {k: v for k, v in document.items() if k != "manifest_sha256"}
        document["manifest_sha256"] = hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    path.write_text(json.dumps(document))


def _set_size(document: dict[str, Any]) -> None:
    document["stores"][0]["size"] += 1


def _set_height(document: dict[str, Any]) -> None:
    document["stores"][1]["facts"]["rows"] = 10**6


def _escape(document: dict[str, Any]) -> None:
    document["secrets"][0]["path"] = "../escaped"


def _escape_store(document: dict[str, Any]) -> None:
    document["stores"][0]["path"] = "../../escaped.sqlite"


def _wide_mode(document: dict[str, Any]) -> None:
    document["secrets"][0]["mode"] = "4777"


def _drop_a_secret(document: dict[str, Any]) -> None:
    document["secrets"].pop()


@pytest.mark.parametrize(
    ("edit", "redigest", "caught"),
    [
        (_set_size, False, "own digest"),
        (_set_height, False, "own digest"),
        (_drop_a_secret, False, "own digest"),
        (_set_size, True, "size"),
        (_escape, True, "malformed manifest"),
        (_escape_store, True, "malformed manifest"),
        (_wide_mode, True, "malformed manifest"),
        (lambda d: d.pop("manifest_sha256"), False, "own digest"),
        (lambda d: d.update(version=2), True, "malformed manifest"),
        (lambda d: d.update(extra="field"), True, "malformed manifest"),
    ],
)
def test_an_edited_manifest_is_caught_before_anything_is_written(
    folder: DataFolder,
    backup: tuple[Path, str],
    tmp_path: Path,
    edit: Callable[[dict[str, Any]], None],
    redigest: bool,
    caught: str,
) -> None:
    source, _digest = backup
    _edit_manifest(source, edit, redigest=redigest)
    fresh = tmp_path / "fresh"
    with pytest.raises(ManifestError, match=caught):
        restore_backup(source, folder.stores(fresh), data_dir=fresh)
    assert not fresh.exists() and not (tmp_path / "escaped").exists()


def test_a_consistent_rewrite_is_caught_by_the_digest_kept_elsewhere(
    folder: DataFolder, backup: tuple[Path, str], tmp_path: Path
) -> None:
    source, digest = backup
    _edit_manifest(source, _set_height, redigest=True)
    fresh = tmp_path / "fresh"
    restore_backup(source, folder.stores(fresh), data_dir=fresh)  # consistent on its own
    with pytest.raises(ManifestError, match="expected"):
        restore_backup(
            source,
            folder.stores(tmp_path / "other"),
            data_dir=tmp_path / "other",
            expected_sha256=digest,
        )


@pytest.mark.parametrize("target", ["first/first.sqlite", "api-key"])
def test_a_changed_or_missing_file_is_caught(
    folder: DataFolder, backup: tuple[Path, str], tmp_path: Path, target: str
) -> None:
    source, _digest = backup
    path = source / target
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    fresh = tmp_path / "fresh"
    with pytest.raises(ManifestError, match="SHA-256"):
        restore_backup(source, folder.stores(fresh), data_dir=fresh)
    path.unlink()
    with pytest.raises(ManifestError, match="missing"):
        restore_backup(source, folder.stores(fresh), data_dir=fresh)
    assert not fresh.exists()


def test_no_manifest_no_restore(folder: DataFolder, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ManifestError, match="not a finished"):
        restore_backup(tmp_path / "empty", folder.stores(), data_dir=tmp_path / "x")
    (tmp_path / "empty" / MANIFEST_NAME).write_text("[1, 2")
    with pytest.raises(ManifestError, match="unreadable"):
        restore_backup(tmp_path / "empty", folder.stores(), data_dir=tmp_path / "x")
