"""``connectors.watch_state.WatchState`` alone: no watchdog, no threads, no sleeping.

The tests play the watcher's part (they report what happened to files) and move a
``ManualClock``; every decision must follow from those calls and the files' sizes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.watch_state import ReadyFile, WatchOptions, WatchState
from ledger.core.clock import ManualClock


class Batches:
    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.fail_next = False

    def __call__(self, batch: list[ReadyFile]) -> None:
        self.seen.append([f.relative_path for f in batch])
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("service down")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "drop"
    folder.mkdir()
    return folder.resolve()


def build(root: Path, **options: object) -> tuple[WatchState, ManualClock, Batches]:
    clock, batches = ManualClock(), Batches()
    opts = {"settle_s": 2.0, "batch_max_wait_s": 0.0, "retry_delay_s": 10.0} | options
    state = WatchState([root], batches, options=WatchOptions(**opts), clock=clock)
    return state, clock, batches


def test_a_changed_file_is_handed_off_once_it_settled(root: Path) -> None:
    state, clock, batches = build(root)
    (root / "a.txt").write_bytes(b"one")
    state.file_changed(root / "a.txt")
    assert state.tick() == 0  # first look at its size
    clock.advance(1.9)
    assert state.tick() == 0 and state.pending_paths() == {root / "a.txt"}
    clock.advance(0.1)
    assert state.tick() == 1
    assert batches.seen == [["a.txt"]] and state.pending_paths() == frozenset()
    clock.advance(10)
    assert state.tick() == 0  # the same content is handed off once


def test_growth_restarts_the_settle_time(root: Path) -> None:
    state, clock, batches = build(root)
    path = root / "a.txt"
    path.write_bytes(b"one")
    state.file_changed(path)
    state.tick()
    clock.advance(1.5)
    path.write_bytes(b"one two")
    state.tick()
    clock.advance(1.5)
    assert state.tick() == 0
    clock.advance(0.5)
    assert state.tick() == 1 and batches.seen == [["a.txt"]]


def test_a_closed_file_is_complete_at_once_unless_close_is_not_trusted(root: Path) -> None:
    state, _clock, batches = build(root)
    (root / "a.txt").write_bytes(b"x")
    state.file_closed(root / "a.txt")
    assert state.tick() == 1 and batches.seen == [["a.txt"]]
    careful, _clock, _batches = build(root, trust_close_write=False)
    careful.file_closed(root / "a.txt")
    assert careful.tick() == 0


def test_batches_hold_at_most_batch_max_files(root: Path) -> None:
    state, _clock, batches = build(root, batch_max_files=2)
    for name in ("a", "b", "c"):
        (root / name).write_bytes(name.encode())
        state.file_closed(root / name)
    assert state.tick() == 3
    assert batches.seen == [["a", "b"], ["c"]]


def test_a_failed_batch_is_handed_off_again_after_the_retry_delay(root: Path) -> None:
    state, clock, batches = build(root)
    (root / "a.txt").write_bytes(b"x")
    state.file_closed(root / "a.txt")
    batches.fail_next = True
    assert state.tick() == 1
    clock.advance(9.9)
    assert state.tick() == 0
    clock.advance(0.1)
    assert state.tick() == 1 and batches.seen == [["a.txt"], ["a.txt"]]


def test_a_complete_file_renamed_is_handed_off_at_once_under_its_new_name(root: Path) -> None:
    state, _clock, batches = build(root)
    (root / "a.txt").write_bytes(b"x")
    state.file_closed(root / "a.txt")
    state.tick()
    (root / "a.txt").rename(root / "b.txt")
    state.moved(root / "a.txt", root / "b.txt", is_dir=False)
    assert state.tick() == 1 and batches.seen == [["a.txt"], ["b.txt"]]


def test_ignored_names_symlinks_and_deleted_files_are_never_handed_off(root: Path) -> None:
    state, clock, batches = build(root)
    (root / "x.part").write_bytes(b"partial")
    (root / "real.txt").write_bytes(b"real")
    (root / "link.txt").symlink_to(root / "real.txt")
    (root / "gone.txt").write_bytes(b"soon gone")
    for name in ("x.part", "link.txt", "gone.txt"):
        state.file_changed(root / name)
    (root / "gone.txt").unlink()
    state.gone(root / "gone.txt", is_dir=False)
    clock.advance(5)
    assert state.tick() == 0 and batches.seen == []
    assert state.pending_paths() == frozenset()


def test_seed_tree_finds_the_files_already_there(root: Path) -> None:
    state, clock, batches = build(root)
    (root / "sub").mkdir()
    (root / "sub" / "a.txt").write_bytes(b"a")
    (root / ".hidden").write_bytes(b"h")
    state.seed_tree(root)
    state.tick()
    clock.advance(2)
    assert state.tick() == 1 and batches.seen == [["sub/a.txt"]]
