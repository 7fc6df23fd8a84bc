"""``hash_files`` per-file overhead: runs of files per thread, buffers reused, threads shared."""

from __future__ import annotations

import hashlib
import os
import threading
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tasks import hashing
from tasks.hashing import hash_files


def small_files(folder: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = folder / f"{i:04d}"
        path.write_bytes(os.urandom(i % 7) + str(i).encode())
        paths.append(path)
    return paths


def test_many_files_keep_their_order(tmp_path: Path) -> None:
    paths = small_files(tmp_path, 333)
    paths.insert(100, tmp_path / "missing")
    results = hash_files(paths, max_workers=3)
    assert [r.path for r in results] == paths
    assert results[100].error is not None and results[100].error.startswith("FileNotFoundError")
    for path, result in zip(paths, results, strict=True):
        if path.name != "missing":
            assert result.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
            assert result.size_bytes == path.stat().st_size


def test_small_files_reuse_one_buffer_per_thread(tmp_path: Path) -> None:
    paths = small_files(tmp_path, 200)
    hash_files(paths[:1], max_workers=1)  # this thread's buffer exists from now on
    tracemalloc.start()
    try:
        hash_files(paths, max_workers=1)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < hashing.BUFFER_BYTES // 4, f"{peak} bytes allocated for 200 tiny files"


def test_concurrent_batches_share_the_hashing_threads(tmp_path: Path, monkeypatch) -> None:
    lock = threading.Lock()
    busy = peak = 0
    hashing_threads: set[str] = set()
    real = hashing.hash_file

    def counting(path: os.PathLike[str], **options: int) -> tuple[str, int]:
        nonlocal busy, peak
        with lock:
            busy += 1
            peak = max(peak, busy)
            hashing_threads.add(threading.current_thread().name)
        try:
            return real(path, **options)
        finally:
            with lock:
                busy -= 1

    monkeypatch.setattr(hashing, "hash_file", counting)
    paths = small_files(tmp_path, 400)
    batches = [paths[i : i + 50] for i in range(0, len(paths), 50)]
    with ThreadPoolExecutor(len(batches)) as flow_threads:  # like Prefect running every batch
        results = list(flow_threads.map(lambda b: hash_files(b, max_workers=2), batches))
    assert [r.path for batch in results for r in batch] == paths
    assert peak <= 2 and len(hashing_threads) <= 2, (peak, hashing_threads)


@pytest.mark.parametrize("count", [1, 2, 5, 64, 65, 1000])
def test_every_batch_size_hashes_each_file_once(tmp_path: Path, count: int, monkeypatch) -> None:
    seen: list[str] = []
    real = hashing.hash_file

    def recording(path: os.PathLike[str], **options: int) -> tuple[str, int]:
        seen.append(os.fspath(path))
        return real(path, **options)

    monkeypatch.setattr(hashing, "hash_file", recording)
    paths = small_files(tmp_path, count)
    results = hash_files(paths, max_workers=4)
    assert len(results) == count and all(r.ok for r in results)
    assert sorted(seen) == sorted(os.fspath(p) for p in paths)
