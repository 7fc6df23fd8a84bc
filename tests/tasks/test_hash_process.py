"""Small files hashed in a child process: the same results as in this process (safety rules
included), one child for many batches, and a child that fails leaves the batch to be
hashed here."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path, PurePosixPath

import pytest

from connectors.folder_source import scan
from tasks.hash_process import HashProcess, shared_hash_process
from tasks.hashing import HashResult, hash_files
from tasks.steps import hash_batch


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    for i in range(40):
        (root / "a" / f"f{i}.txt").write_bytes(f"document {i}\n".encode() * (i + 1))
    (root / "a" / "b" / "deep.bin").write_bytes(os.urandom(5000))
    (root / "a" / "b" / "empty").write_bytes(b"")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret")
    (root / "a" / "link.txt").symlink_to(outside)  # never followed
    (root / "linked").symlink_to(root / "a")  # a folder link on the way: refused
    os.mkfifo(root / "a" / "pipe")  # never opened for reading (it would block)
    return root


def names(root: Path) -> list[str]:
    listed = sorted(
        str(PurePosixPath(p.relative_to(root))) for p in root.rglob("*") if not p.is_dir()
    )
    return [*listed, "linked/f1.txt", "missing.txt", "a/../../outside.txt"]


def test_the_child_hashes_as_this_process_does(folder: Path) -> None:
    paths = names(folder)
    process = HashProcess()
    try:
        first = process.hash_files(paths, root=folder)
        second = process.hash_files(paths[:5], root=str(folder))
        child = process._child.process
        assert child is not None and child.poll() is None  # one child for every batch
    finally:
        process.close()
    assert child.wait(timeout=5) == 0  # it ended at the end of its input
    assert first == hash_files(paths, root=folder, max_workers=1)
    assert second == first[:5]
    by_path = {r.path: r for r in first}
    deep = (folder / "a" / "b" / "deep.bin").read_bytes()
    assert by_path["a/b/deep.bin"] == HashResult(
        "a/b/deep.bin", sha256=hashlib.sha256(deep).hexdigest(), size_bytes=5000
    )
    assert by_path["a/b/empty"].size_bytes == 0
    for refused in ("a/link.txt", "a/pipe", "linked/f1.txt", "missing.txt", "a/../../outside.txt"):
        assert by_path[refused].sha256 is None and by_path[refused].error, refused


def test_the_callers_path_objects_come_back(folder: Path) -> None:
    paths = [PurePosixPath("a/f1.txt"), "a/f2.txt"]
    with_child = HashProcess()
    try:
        results = with_child.hash_files(paths, root=folder)
    finally:
        with_child.close()
    assert [r.path for r in results] == paths
    assert with_child.hash_files([], root=folder) == []
    assert with_child._child.process is None  # no child for nothing


def test_a_child_that_cannot_run_leaves_the_batch_to_this_process(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    process = HashProcess(python=sys.executable + "-missing")
    paths = names(folder)
    assert process.hash_files(paths, root=folder) == hash_files(paths, root=folder)
    assert "hashing this batch in-process" in caplog.text


def test_a_child_answering_nonsense_is_not_trusted(
    folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    liar = tmp_path / "liar"
    # Answers one well-framed pickle of the wrong shape, whatever it is asked.
    liar.write_text(
        f"#!{sys.executable}\n"
        "import pickle, sys\n"
        "sys.stdin.buffer.read(4)\n"
        "body = pickle.dumps([('0' * 63, 1, None)])\n"
        "sys.stdout.buffer.write(len(body).to_bytes(4, 'little') + body)\n"
    )
    liar.chmod(liar.stat().st_mode | stat.S_IXUSR)
    process = HashProcess(python=str(liar))
    try:
        assert process.hash_files(["a/f1.txt"], root=folder) == hash_files(
            ["a/f1.txt"], root=folder
        )
    finally:
        process.close()
    assert "hashing this batch in-process" in caplog.text


def test_a_child_killed_between_batches_is_replaced(folder: Path) -> None:
    process = HashProcess()
    paths = names(folder)
    try:
        expected = process.hash_files(paths, root=folder)
        child = process._child.process
        assert child is not None
        child.kill()
        child.wait()
        assert process.hash_files(paths, root=folder) == expected
        assert (
            process._child.process is not None and process._child.process.pid != child.pid
        )  # a new one
    finally:
        process.close()


def test_hash_batch_gives_the_same_results_either_way(folder: Path) -> None:
    entries = list(scan(folder))
    assert entries
    in_child = hash_batch.fn(entries, workers=4, root=str(folder), small_files="process")
    here = hash_batch.fn(entries, workers=4, root=str(folder), small_files="thread")
    assert in_child.items == here.items
    assert shared_hash_process() is shared_hash_process()
    assert shared_hash_process()._child.process is not None  # the small batch went to the child


def test_the_hashing_child_loads_no_http_client() -> None:
    """What the hashing child imports (``tasks.hash_process``) reaches the connectors' error
    tree through the safe file reading, but never httpx or the JSON-RPC clients: each would
    cost every hashing child memory for calls it never makes."""
    import subprocess

    code = (
        "import sys, tasks.hash_process\n"
        "bad = sorted(m for m in ('httpx', 'ledger.jsonrpc.client') if m in sys.modules)\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
