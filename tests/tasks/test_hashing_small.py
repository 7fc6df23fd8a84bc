"""Small files: one read each, the folder kept from file to file, one thread per batch."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from tasks import hashing
from tasks.hashing import SMALL_FILE_BYTES, THREADS_MIN_MEAN_BYTES, hash_file, hash_files


@pytest.mark.parametrize(
    "size", [0, 1, SMALL_FILE_BYTES - 1, SMALL_FILE_BYTES, SMALL_FILE_BYTES + 1]
)
def test_sizes_around_the_one_read_limit(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    expected = (hashlib.sha256(data).hexdigest(), size)
    assert hash_file(tmp_path / "f") == expected
    [result] = hash_files(["f"], root=tmp_path, sizes=[size])
    assert (result.sha256, result.size_bytes) == expected


def tree(root: Path) -> list[str]:
    """Files in nested folders, listed as a scan lists them (folder by folder)."""
    names = []
    for folder in ("a", "a/b", "c", ""):
        for i in range(3):
            relative = f"{folder}/{i}.txt" if folder else f"{i}.txt"
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_bytes(relative.encode())
            names.append(relative)
    return names


def test_files_of_many_folders_in_any_order(tmp_path: Path) -> None:
    names = tree(tmp_path)
    mixed = names[::2] + names[1::2] + ["a/missing.txt", "a/b/../0.txt", "a"]
    results = hash_files(mixed, root=tmp_path, max_workers=1)
    assert [r.path for r in results] == mixed
    for name, result in zip(names[::2] + names[1::2], results, strict=False):
        assert result.sha256 == hashlib.sha256(name.encode()).hexdigest()
    missing, dotdot, folder = results[-3:]
    assert missing.error is not None and missing.error.startswith("FileNotFoundError")
    assert dotdot.error is not None and "UnsafeFileError" in dotdot.error
    assert folder.error is not None and "not a regular file" in folder.error


def test_a_folder_swapped_between_two_batches_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "drop", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    for name in ("1.txt", "2.txt"):
        (root / "sub" / name).write_bytes(b"inside")
        (outside / name).write_bytes(b"secret")
    [first] = hash_files(["sub/1.txt"], root=root)
    assert first.sha256 == hashlib.sha256(b"inside").hexdigest()
    (root / "sub").rename(tmp_path / "moved")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    results = hash_files(["sub/1.txt", "sub/2.txt"], root=root, sizes=[6, 6])
    assert all(not r.ok and r.sha256 is None for r in results)


def record_threads(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    seen: set[str] = set()
    real = hashing.open_file_at

    def recording(dir_fd: int, name: str, *, display: str) -> tuple[int, os.stat_result]:
        seen.add(threading.current_thread().name)
        return real(dir_fd, name, display=display)

    monkeypatch.setattr(hashing, "open_file_at", recording)
    return seen


def test_a_batch_of_small_files_is_hashed_on_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"{i:03d}" for i in range(300)]
    for name in names:
        (tmp_path / name).write_bytes(name.encode() * 100)
    seen = record_threads(monkeypatch)
    results = hash_files(names, root=tmp_path, max_workers=4, sizes=[300] * len(names))
    assert [r.sha256 for r in results] == [
        hashlib.sha256(n.encode() * 100).hexdigest() for n in names
    ]
    assert len(seen) == 1 and seen != {threading.current_thread().name}, seen


def test_a_batch_of_large_files_is_spread_over_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"{i:03d}" for i in range(64)]
    for name in names:
        (tmp_path / name).write_bytes(name.encode())
    gate = threading.Barrier(2, timeout=5)
    real = hashing.open_file_at

    def two_at_once(dir_fd: int, name: str, *, display: str) -> tuple[int, os.stat_result]:
        if name == names[0] or name == names[-1]:  # the first and the last run meet
            gate.wait()
        return real(dir_fd, name, display=display)

    monkeypatch.setattr(hashing, "open_file_at", two_at_once)
    large = [THREADS_MIN_MEAN_BYTES] * len(names)  # the scan's sizes, a hint only
    results = hash_files(names, root=tmp_path, max_workers=2, sizes=large)
    assert all(r.ok for r in results) and [r.size_bytes for r in results] == [3] * len(names)


def test_sizes_must_be_one_per_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="2 sizes for 1 paths"):
        hash_files(["a"], root=tmp_path, sizes=[1, 2])
