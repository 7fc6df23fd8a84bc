"""A folder scanned in a child process: the same entries, order and refusals as ``scan``
in this process, a child reused by the next scan, and a child that fails (at the start or
half way) leaves the rest of the scan to this process without losing or repeating an entry."""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from connectors.folder_source import ScanEntry, scan
from tasks.scan_process import ITEMS_PER_MESSAGE, scan_in_child


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    for i in range(3 * ITEMS_PER_MESSAGE):  # several messages
        (root / "a" / f"f{i:04}.txt").write_bytes(b"x" * (i % 7))
    (root / "a" / "b" / "deep.bin").write_bytes(b"deep")
    (root / "a.txt").write_bytes(b"sorts before a/")
    (root / ".hidden").write_bytes(b"ignored")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret")
    (root / "a" / "link.txt").symlink_to(outside)  # refused, never followed
    (root / "linked").symlink_to(root / "a")  # a folder link: refused
    os.mkfifo(root / "a" / "pipe")  # refused, never opened
    (root / os.fsdecode(b"bad\xff")).write_bytes(b"not UTF-8")  # refused
    return root


def scanned(
    scanner: object, root: Path, **kwargs: object
) -> tuple[list[ScanEntry], list[tuple[str, str]]]:
    refused: list[tuple[str, str]] = []
    entries = list(scanner(root, on_skip=lambda p, r: refused.append((p, r)), **kwargs))  # type: ignore[operator]
    return entries, refused


def test_the_child_scans_as_this_process_does(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="connectors.folder_source")
    expected, expected_refused = scanned(scan, folder)
    here_log = [r.getMessage() for r in caplog.records]
    caplog.clear()
    entries, refused = scanned(scan_in_child, folder)
    assert entries == expected
    assert [e.absolute_path for e in entries] == [e.absolute_path for e in expected]
    assert entries[0].absolute_path == folder.resolve() / "a.txt"
    assert refused == expected_refused
    assert {p for p, _r in refused} == {"a/link.txt", "a/pipe", "linked", "bad\\xff"}
    assert [r.getMessage() for r in caplog.records] == here_log  # logged here, the same


def test_the_next_scan_reuses_the_child(folder: Path) -> None:
    first, _ = scanned(scan_in_child, folder)
    import tasks.scan_process as module

    (idle,) = module._idle[(os.getpid(), sys.executable)]
    child = idle.process
    assert child is not None and child.poll() is None
    second, _ = scanned(scan_in_child, folder / "a" / "b")
    assert [e.relative_path for e in second] == ["deep.bin"]
    assert module._idle[(os.getpid(), sys.executable)][0].process is child


def test_a_scan_left_early_stops_its_child(folder: Path) -> None:
    import tasks.scan_process as module

    module._idle.pop((os.getpid(), sys.executable), None)
    walk = scan_in_child(folder)
    assert next(walk).relative_path == "a.txt"
    walk.close()  # the child is half way: not kept for another scan
    assert not module._idle.get((os.getpid(), sys.executable))


def test_a_root_that_is_no_folder_is_refused_here(folder: Path) -> None:
    with pytest.raises(NotADirectoryError):
        list(scan_in_child(folder / "a.txt"))
    with pytest.raises(FileNotFoundError):
        list(scan_in_child(folder / "missing"))


def test_a_child_that_cannot_run_leaves_the_scan_to_this_process(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    expected = scanned(scan, folder)
    assert scanned(scan_in_child, folder, python=sys.executable + "-missing") == expected
    assert "scanning in this process" in caplog.text


def test_a_child_dying_half_way_loses_and_repeats_nothing(
    folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dying = tmp_path / "dying"
    # The real child, its answer cut short in the middle of its second message. The shell
    # lets go of the pipe to the parent (only ``head`` writes it), so the parent sees its
    # end when ``head`` exits: a child that has written everything and waits for the next
    # request (a small folder fits in the pipe) no longer keeps it open through the shell.
    dying.write_text(
        "#!/bin/sh\n"
        "exec 3<&0\n"
        f'"{sys.executable}" "$@" <&3 3<&- | head -c 20000 &\n'
        "exec 0<&- 1>&- 3<&-\n"
        "wait\n"
    )
    dying.chmod(dying.stat().st_mode | stat.S_IXUSR)
    entries, refused = scanned(scan_in_child, folder, python=str(dying))
    assert "scanning in this process" in caplog.text
    assert (entries, refused) == scanned(scan, folder)
