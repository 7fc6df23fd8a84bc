"""A file written while it is hashed: the hash recorded is of a version that existed, or
the file is an error "changed while hashed"; never a hash of a torn read.

The writer is driven between two reads of one hashing pass (``tests.tasks.torn_reads``),
so the race happens every time: rewritten in place, appended to, truncated; once (the
next pass reads a settled version) or on every read (the file never settles).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tasks.hashing import SMALL_FILE_BYTES, HashResult, hash_file, hash_file_below, hash_files
from tests.tasks.torn_reads import Race, settle_in_the_past

MIB = 1024 * 1024
#: Three buffers' worth: the large-file path reads it in several reads.
LARGE = 3 * MIB + 123
SMALL = 10_000


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def versions(old: bytes, race: Race) -> dict[str, bytes]:
    """Every content the file had: before, and after each change the race can make."""
    if race.action == "rewrite":
        new = race.data + old[len(race.data) :]
    elif race.action == "append":
        new = old + race.data
    else:
        new = old[: race.keep_bytes]
    found = {sha(old): old, sha(new): new}
    if race.action == "append" and race.times != 1:
        found |= {sha(old + race.data * k): old + race.data * k for k in range(2, 50)}
    return found


def race_for(path: Path, action: str, size: int, *, times: int) -> Race:
    if action == "rewrite":
        return Race(str(path), "rewrite", os.urandom(size), times=times)
    if action == "append":
        return Race(str(path), "append", b"appended line\n", times=times)
    return Race(str(path), "truncate", keep_bytes=size // 3, times=times)


def hashed(tmp_path: Path, path: Path, how: str) -> HashResult:
    if how == "below root":
        (result,) = hash_files([path.name], root=tmp_path, max_workers=1)
        return result
    try:
        if how == "one below root":
            digest, size = hash_file_below(tmp_path, path.name)
        else:
            digest, size = hash_file(path)
    except OSError as exc:
        return HashResult(path, error=f"{type(exc).__name__}: {exc}")
    return HashResult(path, sha256=digest, size_bytes=size)


@pytest.mark.parametrize("how", ["below root", "one below root", "by path"])
@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["small", "large"])
@pytest.mark.parametrize("action", ["rewrite", "append", "truncate"])
def test_a_file_changed_once_while_hashed_gets_the_hash_of_a_real_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, size: int, action: str
) -> None:
    path = tmp_path / "doc.bin"
    old = os.urandom(size)
    path.write_bytes(old)
    settle_in_the_past(path)
    race = race_for(path, action, size, times=1)
    real = versions(old, race)
    race.install(monkeypatch.setattr)

    result = hashed(tmp_path, path, how)

    assert race.fired == 1
    assert result.ok, result.error
    assert result.sha256 in real, "a hash of content the file never held"
    # The version hashed is the one now on disk: the pass that saw the change was dropped.
    assert result.sha256 == sha(path.read_bytes())
    assert result.size_bytes == len(real[result.sha256])


@pytest.mark.parametrize("how", ["below root", "one below root", "by path"])
@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["small", "large"])
def test_a_file_that_never_settles_is_an_error_changed_while_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, size: int
) -> None:
    """Appended to during every pass (a log being written): each pass sees its size move.
    (A rewrite in place of the same size, repeated within one tick of the file system's
    clock, moves no field from the second pass on: module docstring of ``tasks.hashing``.)"""
    path = tmp_path / "doc.bin"
    path.write_bytes(os.urandom(size))
    settle_in_the_past(path)
    race = Race(str(path), "append", b"one more line\n", times=0)
    race.install(monkeypatch.setattr)

    result = hashed(tmp_path, path, how)

    assert not result.ok and result.sha256 is None and result.size_bytes is None
    assert "changed while hashed" in (result.error or "")
    assert race.fired >= 2  # it was hashed again before giving up


def test_a_large_file_rewritten_in_place_is_never_recorded_torn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case found in the field: version A overwritten by B while A is streamed."""
    path = tmp_path / "big.bin"
    a, b = os.urandom(LARGE), os.urandom(LARGE)
    path.write_bytes(a)
    settle_in_the_past(path)
    Race(str(path), "rewrite", b, times=1).install(monkeypatch.setattr)
    assert LARGE > SMALL_FILE_BYTES

    (result,) = hash_files([path.name], root=tmp_path, max_workers=1)

    assert result.sha256 in (sha(a), sha(b)), f"torn: {result}"


@pytest.mark.parametrize("times", [1, 0], ids=["once", "always"])
def test_the_hashing_child_hashes_a_real_version_or_reports_the_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, times: int
) -> None:
    from tasks.hash_process import HashProcess
    from tests.tasks.torn_reads import RACE_ENV

    path = tmp_path / "doc.txt"
    old, new = os.urandom(SMALL), os.urandom(SMALL)
    path.write_bytes(old)
    (tmp_path / "other.txt").write_bytes(b"left alone")
    settle_in_the_past(path)
    race = Race(str(path), "rewrite", new) if times else Race(str(path), "append", b"+", times=0)
    monkeypatch.setenv(RACE_ENV, race.to_json())
    process = HashProcess(module="tests.tasks.torn_hash_child")
    try:
        doc, other = process.hash_files(["doc.txt", "other.txt"], root=tmp_path, attempts=2)
        child = process._child.process
        assert child is not None and child.poll() is None  # answered by the child itself
    finally:
        process.close()

    assert other.sha256 == sha(b"left alone")
    if times == 1:
        assert (doc.sha256, doc.size_bytes) == (sha(new), SMALL)
    else:
        assert doc.sha256 is None and "changed while hashed (2 attempts)" in (doc.error or "")


def test_the_thread_path_of_a_hash_batch_reports_the_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hash_batch`` (the task every runner runs, Dask's workers included) with files
    large enough for the threads."""
    from connectors.folder_source import scan
    from tasks.steps import hash_batch

    for i in range(4):
        (tmp_path / f"f{i}.bin").write_bytes(os.urandom(LARGE))
    target = tmp_path / "f2.bin"
    settle_in_the_past(target)
    Race(str(target), "append", b"+", times=0).install(monkeypatch.setattr)
    entries = list(scan(tmp_path))

    results = hash_batch.fn(entries, workers=2, root=str(tmp_path), attempts=3).items

    by_name = {r.path: r for r in results}
    assert "changed while hashed (3 attempts)" in (by_name["f2.bin"].error or "")
    for name in ("f0.bin", "f1.bin", "f3.bin"):
        assert by_name[name].sha256 == sha((tmp_path / name).read_bytes())
