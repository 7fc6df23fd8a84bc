"""Tests of connectors.folder_watch with real files, real inotify events and a manual clock.

Events arrive on watchdog's thread, so tests poll ``tick()`` with a real-time deadline; the
settle and batch times run on a ``ManualClock`` and only move when a test advances them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from connectors.folder_watch import FolderWatcher, ReadyFile, WatchOptions, move_to_done
from ledger.core.clock import ManualClock
from tests.harness.waiting import WaitTimeout, wait_until

DEADLINE_S = 15.0


class Recorder:
    """A batch handler that records batches and can fail or ask for retries."""

    def __init__(self) -> None:
        self.batches: list[list[ReadyFile]] = []
        self.fail_next = False
        self.retry_next = False

    def __call__(self, batch: list[ReadyFile]) -> list[ReadyFile] | None:
        self.batches.append(batch)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("service down")
        if self.retry_next:
            self.retry_next = False
            return batch
        return None

    @property
    def names(self) -> list[str]:
        return [f.relative_path for batch in self.batches for f in batch]


class Harness:
    def __init__(self, root: Path, **options: object) -> None:
        self.root = root
        self.clock = ManualClock()
        self.recorder = Recorder()
        opts = {"settle_s": 2.0, "batch_max_wait_s": 0.0, "retry_delay_s": 10.0} | options
        self.watcher = FolderWatcher(
            [root],
            self.recorder,
            options=WatchOptions(**opts),
            clock=self.clock,  # type: ignore[arg-type]
        )

    def until(self, predicate: Callable[[], bool], *, advance_s: float = 0.0) -> None:
        """Tick until ``predicate()`` holds (advancing the clock each round if asked)."""

        def ticked() -> bool:
            self.watcher.tick()
            if predicate():
                return True
            if advance_s:
                self.clock.advance(advance_s)
            return False

        wait_until(ticked, DEADLINE_S, 0.02, what=lambda: f"handed off: {self.recorder.names}")

    def seen(self, *paths: Path) -> None:
        """Tick until the watcher has noticed each path (candidate or ready)."""
        self.until(lambda: all(p in self.watcher.pending_paths() for p in paths))

    def quiet_ticks(self, seconds: float = 0.3) -> None:
        """Keep ticking for a short real time (to let stray events arrive)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.watcher.tick()
            time.sleep(0.02)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "drop"
    folder.mkdir()
    return folder


@pytest.fixture
def make(root: Path) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def build(**options: object) -> Harness:
        harness = Harness(root, **options)
        harness.watcher.start()
        made.append(harness)
        return harness

    yield build
    for harness in made:
        harness.watcher.stop()


def write(path: Path, data: bytes = b"data") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_file_written_in_chunks_is_handed_off_only_once_closed(make, root: Path) -> None:
    h = make()
    target = root / "big.bin"
    with open(target, "wb") as handle:
        for i in range(5):
            handle.write(bytes([i]) * 4096)
            handle.flush()
            if i == 0:
                h.seen(target)
            h.watcher.tick()
            h.clock.advance(1.5)  # less than settle_s between chunks
            h.watcher.tick()
            assert h.recorder.batches == []
    h.until(lambda: h.recorder.names == ["big.bin"])
    (file,) = h.recorder.batches[0]
    assert file.size_bytes == 5 * 4096 and file.path == target and file.root == root.resolve()


def test_open_file_stable_for_the_settle_time_is_handed_off_once(make, root: Path) -> None:
    h = make()
    target = root / "slow.csv"
    with open(target, "wb") as handle:
        handle.write(b"a,b\n" * 100)
        handle.flush()
        h.seen(target)
        h.quiet_ticks(0.2)  # let the write's own events arrive
        h.clock.advance(1.9)
        h.watcher.tick()
        assert h.recorder.batches == []
        h.until(lambda: h.recorder.names == ["slow.csv"], advance_s=0.2)
    h.quiet_ticks()  # the close event of unchanged content is not a change
    assert h.recorder.names == ["slow.csv"]


def test_close_write_can_be_distrusted(make, root: Path) -> None:
    h = make(trust_close_write=False)
    target = write(root / "doc.txt")
    h.seen(target)
    h.quiet_ticks(0.2)
    assert h.recorder.batches == []
    h.until(lambda: h.recorder.names == ["doc.txt"], advance_s=0.5)


def test_changed_file_is_handed_off_again(make, root: Path) -> None:
    h = make()
    target = write(root / "a.txt", b"one")
    h.until(lambda: h.recorder.names == ["a.txt"])
    write(target, b"two, longer")
    h.until(lambda: h.recorder.names == ["a.txt", "a.txt"])
    assert [b[0].size_bytes for b in h.recorder.batches] == [3, 11]


def test_temp_name_renamed_into_place_settles_then_rename_of_complete_file_is_immediate(
    make, root: Path
) -> None:
    (root / "archive").mkdir()
    h = make()
    part = write(root / "report.pdf.part", b"%PDF-1.7 ...")
    final = root / "report.pdf"
    os.rename(part, final)
    h.seen(final)
    h.watcher.tick()
    assert h.recorder.batches == []  # renamed into place: new, must settle
    h.until(lambda: h.recorder.names == ["report.pdf"], advance_s=0.5)

    moved = root / "archive" / "final.pdf"
    os.rename(final, moved)  # complete file renamed: handed off at once, under the new name
    h.until(lambda: h.recorder.names == ["report.pdf", "archive/final.pdf"])
    assert h.recorder.batches[-1][0].path == moved


def test_temporary_hidden_and_partial_files_are_ignored(make, root: Path) -> None:
    h = make()
    for name in (".hidden", "x.part", "~$lock.docx", ".edit.swp", "edit.swp", "t.tmp"):
        write(root / name)
    write(root / ".git" / "config")
    write(root / "sub" / ".cache" / "blob")
    write(root / "sub" / "ok.txt")
    # files in a brand-new folder may be found by its scan (no close event): they settle
    h.until(lambda: h.recorder.names == ["sub/ok.txt"], advance_s=0.5)
    h.clock.advance(10)
    h.quiet_ticks()
    assert h.recorder.names == ["sub/ok.txt"]
    assert h.watcher.pending_paths() == frozenset()


def test_ignore_patterns_are_configurable(make, root: Path) -> None:
    h = make(ignore_patterns=("*.log",))
    write(root / "run.log")
    write(root / ".dotfile")
    h.until(lambda: h.recorder.names == [".dotfile"])
    h.quiet_ticks()
    assert h.recorder.names == [".dotfile"]


def test_symlinks_are_never_followed(make, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.txt", b"secret")
    os.symlink(outside / "secret.txt", root / "before.txt")
    os.symlink(outside, root / "linkdir")
    h = make()
    os.symlink(outside / "secret.txt", root / "after.txt")
    write(outside / "new-secret.txt", b"more")  # visible through root/linkdir
    write(root / "real.txt")
    h.until(lambda: "real.txt" in h.recorder.names, advance_s=0.5)
    h.clock.advance(10)
    h.quiet_ticks()
    assert h.recorder.names == ["real.txt"]


def test_file_replaced_by_a_symlink_is_not_handed_off(make, root: Path, tmp_path: Path) -> None:
    h = make()
    target = root / "doc.txt"
    with open(target, "wb") as handle:
        handle.write(b"data")
        handle.flush()
        h.seen(target)
        target.unlink()
        os.symlink(write(tmp_path / "secret"), target)
    h.clock.advance(10)
    h.quiet_ticks()
    assert h.recorder.names == []
    assert h.watcher.pending_paths() == frozenset()


def test_folder_emptied_deleted_and_recreated_is_watched_again(make, root: Path) -> None:
    write(root / "a.txt", b"a")
    h = make()
    h.until(lambda: h.recorder.names == ["a.txt"], advance_s=0.5)  # startup scan

    (root / "a.txt").unlink()  # emptied, then the same content dropped again
    write(root / "a.txt", b"a")
    h.until(lambda: h.recorder.names == ["a.txt"] * 2, advance_s=0.5)

    shutil.rmtree(root)  # deleted: the watch is lost...
    h.until(lambda: not h.watcher.is_armed(root))
    root.mkdir()  # ...and re-armed when the folder comes back
    write(root / "b.txt", b"b")
    h.until(lambda: h.recorder.names[-1:] == ["b.txt"], advance_s=0.5)
    assert h.watcher.is_armed(root)

    shutil.rmtree(root)  # replaced between two ticks
    root.mkdir()
    write(root / "c.txt", b"c")
    h.until(lambda: h.recorder.names[-1:] == ["c.txt"], advance_s=0.5)
    write(root / "d.txt", b"d")  # the new folder's watch works
    h.until(lambda: h.recorder.names[-1:] == ["d.txt"])
    assert h.recorder.names.count("b.txt") == 1 and h.recorder.names.count("c.txt") == 1


def test_folder_moved_in_is_scanned(make, root: Path, tmp_path: Path) -> None:
    h = make()
    staging = tmp_path / "staging"
    write(staging / "one.txt", b"1")
    write(staging / "deep" / "two.txt", b"2")
    os.rename(staging, root / "batch")
    h.until(
        lambda: sorted(h.recorder.names) == ["batch/deep/two.txt", "batch/one.txt"],
        advance_s=0.5,
    )


def test_bursts_are_batched_by_count_then_by_time(make, root: Path) -> None:
    h = make(batch_max_files=10, batch_max_wait_s=5.0)
    for i in range(25):
        write(root / f"f{i:02}.txt", str(i).encode())
    h.until(lambda: len(h.recorder.names) == 20 and len(h.watcher.ready_paths()) == 5)
    assert [len(b) for b in h.recorder.batches] == [10, 10]
    h.clock.advance(4.9)
    h.watcher.tick()
    assert len(h.recorder.batches) == 2
    h.clock.advance(0.2)
    h.watcher.tick()
    assert [len(b) for b in h.recorder.batches] == [10, 10, 5]
    assert sorted(h.recorder.names) == [f"f{i:02}.txt" for i in range(25)]


def test_failed_batch_and_returned_files_are_retried_after_the_delay(make, root: Path) -> None:
    h = make(retry_delay_s=10.0)
    h.recorder.fail_next = True
    write(root / "a.txt")
    h.until(lambda: len(h.recorder.batches) == 1)
    h.clock.advance(9.9)
    h.quiet_ticks(0.1)
    assert len(h.recorder.batches) == 1
    h.recorder.retry_next = True
    h.clock.advance(0.2)
    h.until(lambda: len(h.recorder.batches) == 2)
    h.clock.advance(10.5)
    h.until(lambda: len(h.recorder.batches) == 3)
    h.clock.advance(10.5)
    h.quiet_ticks(0.1)
    assert h.recorder.names == ["a.txt"] * 3


def test_done_folder_is_not_watched_and_move_to_done_keeps_the_relative_path(
    make, root: Path
) -> None:
    done = root / "done"
    h = make(exclude_dirs=(done,))
    write(done / "old.txt")
    write(root / "sub" / "y.txt", b"y")
    h.until(lambda: h.recorder.names == ["sub/y.txt"], advance_s=0.5)
    (file,) = h.recorder.batches[0]
    assert move_to_done(file, done) == done / "sub" / "y.txt"
    assert (done / "sub" / "y.txt").read_bytes() == b"y" and not file.path.exists()
    h.clock.advance(10)
    h.quiet_ticks()
    assert h.recorder.names == ["sub/y.txt"]


def test_move_to_done_leaves_changed_files_and_never_overwrites(root: Path) -> None:
    done = root.parent / "done"
    path = write(root / "a.txt", b"first")
    st = path.stat()
    file = ReadyFile(root, path, "a.txt", st.st_size, st.st_mtime_ns)
    write(done / "a.txt", b"already there")
    assert move_to_done(file, done) == done / "a (1).txt"
    assert (done / "a.txt").read_bytes() == b"already there"

    path = write(root / "a.txt", b"second")
    stale = ReadyFile(root, path, "a.txt", 5, 0)
    assert move_to_done(stale, done) is None and path.exists()
    assert move_to_done(ReadyFile(root, root / "gone", "gone", 1, 1), done) is None


def test_run_loop_with_the_system_clock_stops_on_the_event(root: Path) -> None:
    recorder = Recorder()
    watcher = FolderWatcher(
        [root], recorder, options=WatchOptions(settle_s=0.2, batch_max_wait_s=0.1)
    )
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), kwargs={"poll_interval_s": 0.05})
    thread.start()
    try:
        write(root / "x.txt")
        with contextlib.suppress(WaitTimeout):  # checked just below
            wait_until(lambda: recorder.names == ["x.txt"], DEADLINE_S)
        assert recorder.names == ["x.txt"]
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert not watcher.is_armed(root)


def test_missing_folder_is_refused_at_start(tmp_path: Path) -> None:
    watcher = FolderWatcher([tmp_path / "nope"], Recorder())
    with pytest.raises(FileNotFoundError):
        watcher.start()
    with pytest.raises(ValueError):
        WatchOptions(batch_max_files=0)
