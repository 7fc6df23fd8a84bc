"""Tests of tasks.hashing: streaming file hashes and batch hashing with per-file errors."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

import tasks.hashing as hashing
from tasks.hashing import BUFFER_BYTES, HashResult, hash_file, hash_files

MIB = 1024 * 1024


def test_hash_file_known_answers(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    abc = tmp_path / "abc"
    abc.write_bytes(b"abc")
    assert hash_file(empty) == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        0,
    )
    assert hash_file(str(abc)) == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        3,
    )


@pytest.mark.parametrize("size", [BUFFER_BYTES - 1, BUFFER_BYTES, BUFFER_BYTES + 1, 3 * MIB + 7])
def test_hash_file_across_buffer_boundaries(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert hash_file(path) == (hashlib.sha256(data).hexdigest(), size)


def test_huge_sparse_file_hashes_with_flat_memory(tmp_path: Path) -> None:
    size = 200 * MIB
    path = tmp_path / "sparse.bin"
    with open(path, "wb") as handle:
        handle.truncate(size - 1)
        handle.seek(size - 1)
        handle.write(b"\x01")
    # Expected digest computed independently, 8 MiB at a time; the last byte is 0x01.
    zeros = bytes(8 * MIB)
    expected = hashlib.sha256()
    for _ in range(size // len(zeros) - 1):
        expected.update(zeros)
    expected.update(zeros[:-1] + b"\x01")

    tracemalloc.start()
    try:
        digest, hashed = hash_file(path)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (digest, hashed) == (expected.hexdigest(), size)
    assert peak < 4 * MIB, f"peak Python allocation {peak} bytes grows with the file"


def test_hash_file_raises_oserror_for_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        hash_file(tmp_path / "missing")
    with pytest.raises(IsADirectoryError):
        hash_file(tmp_path)


def test_hash_files_keeps_order_and_captures_errors(tmp_path: Path) -> None:
    paths: list[Path] = []
    for i in range(20):
        p = tmp_path / f"f{i}.txt"
        p.write_bytes(f"content {i}".encode())
        paths.append(p)
    bad = [tmp_path / "missing.txt", tmp_path]
    mixed = paths[:5] + bad + paths[5:]
    results = hash_files(mixed, max_workers=4)
    assert [r.path for r in results] == mixed
    for result, path in zip(results, mixed, strict=True):
        if path in bad:
            assert not result.ok and result.sha256 is None and result.size_bytes is None
        else:
            data = path.read_bytes()
            assert result == HashResult(path, hashlib.sha256(data).hexdigest(), len(data))
    assert results[5].error.startswith("FileNotFoundError")
    assert results[6].error.startswith("IsADirectoryError")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_hash_files_reports_a_file_that_fails_while_reading() -> None:
    # /proc/self/mem opens fine but reading offset 0 fails with EIO.
    (result,) = hash_files(["/proc/self/mem"])
    assert not result.ok and "OSError" in result.error


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_hash_files_reports_permission_denied(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.write_bytes(b"secret")
    locked.chmod(0)
    (result,) = hash_files([locked])
    assert result.error.startswith("PermissionError")


def test_hash_files_runs_in_parallel_threads(tmp_path: Path, monkeypatch) -> None:
    seen: set[str] = set()
    barrier = threading.Barrier(3, timeout=5)
    real = hashing.hash_file

    def slow_hash(path: os.PathLike[str], **options: int) -> tuple[str, int]:
        seen.add(threading.current_thread().name)
        barrier.wait()  # fails unless 3 files are hashed at the same time
        return real(path, **options)

    monkeypatch.setattr(hashing, "hash_file", slow_hash)
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}"
        p.write_bytes(b"x")
        paths.append(p)
    results = hash_files(paths, max_workers=3)
    assert all(r.ok for r in results) and len(seen) == 3


def test_hash_files_edge_arguments(tmp_path: Path) -> None:
    assert hash_files([]) == []
    with pytest.raises(ValueError):
        hash_files([tmp_path], max_workers=0)
    one = tmp_path / "one"
    one.write_bytes(b"1")
    assert hash_files([one], max_workers=1)[0].sha256 == hashlib.sha256(b"1").hexdigest()


def test_hashing_module_does_not_import_prefect() -> None:
    source = Path(hashing.__file__).read_text()
    assert "prefect" not in source
