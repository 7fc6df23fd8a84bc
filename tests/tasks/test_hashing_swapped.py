"""A file swapped after the scan listed it: a symlink or a FIFO is refused, not read."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from tasks.hashing import hash_file, hash_files


def test_regular_file_is_hashed(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"hello")
    assert hash_file(target) == (hashlib.sha256(b"hello").hexdigest(), 5)


def test_symlink_swapped_in_is_refused_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret outside the folder")
    folder = tmp_path / "drop"
    folder.mkdir()
    (folder / "doc.txt").symlink_to(outside)
    [result] = hash_files([folder / "doc.txt"])
    assert not result.ok
    assert result.sha256 is None
    assert "Errno 40" in (result.error or "") or "symbolic" in (result.error or "").lower()


def test_fifo_swapped_in_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "doc.txt"
    os.mkfifo(fifo)
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(hash_files([fifo])[0]), daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "hashing a FIFO blocked"
    [result] = outcome
    assert not result.ok  # type: ignore[attr-defined]
    assert "not a regular file" in (result.error or "")  # type: ignore[attr-defined]


def test_files_below_a_root_are_hashed_by_relative_path(tmp_path: Path) -> None:
    folder = tmp_path / "drop"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "doc.txt").write_bytes(b"nested")
    (folder / "top.txt").write_bytes(b"top")
    results = hash_files(["a/b/doc.txt", "top.txt", "missing.txt"], root=folder, max_workers=2)
    assert [r.sha256 for r in results[:2]] == [
        hashlib.sha256(b"nested").hexdigest(),
        hashlib.sha256(b"top").hexdigest(),
    ]
    assert [r.path for r in results] == ["a/b/doc.txt", "top.txt", "missing.txt"]
    assert not results[2].ok and "FileNotFoundError" in (results[2].error or "")


def test_folder_swapped_for_a_symlink_after_the_scan_is_not_followed(tmp_path: Path) -> None:
    folder = tmp_path / "drop"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "doc.txt").write_bytes(b"listed by the scan")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "doc.txt").write_bytes(b"secret outside the folder")
    # After the scan listed sub/doc.txt, someone replaces the folder with a symlink.
    (folder / "sub" / "doc.txt").unlink()
    (folder / "sub").rmdir()
    (folder / "sub").symlink_to(outside, target_is_directory=True)
    [result] = hash_files(["sub/doc.txt"], root=folder)
    assert not result.ok and result.sha256 is None
    by_path = hash_files([folder / "sub" / "doc.txt"])[0]  # the path-based open follows it
    assert by_path.sha256 == hashlib.sha256(b"secret outside the folder").hexdigest()


def test_relative_path_leaving_the_root_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "drop"
    folder.mkdir()
    (tmp_path / "secret.txt").write_bytes(b"outside")
    [result] = hash_files(["../secret.txt"], root=folder)
    assert not result.ok and "UnsafeFileError" in (result.error or "")
