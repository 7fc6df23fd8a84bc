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
