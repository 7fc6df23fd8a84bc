"""Hostile drop folders: odd names, links, special files, depth, permissions, races.

The folder source (``connectors.folder_source``) and the watcher
(``connectors.folder_watch``) must never read outside the folder, never block on a FIFO,
refuse what they cannot handle with a clear per-file reason instead of failing the run,
and keep every path they do hand on exactly as it is on disk. ``open_regular`` is the
safe way to read a listed file after the scan (the file may have been swapped since).

Permissions: the tests run as root here, and root reads a ``chmod 000`` file and lists a
``chmod 000`` folder regardless (``CAP_DAC_OVERRIDE``); a test run as root cannot observe
"unreadable" at all. ``as_nobody`` therefore drops the effective user to ``nobody`` for
the duration of the check (and the root-run counterpart asserts that root does read the
file), so both cases are exercised on this machine.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.folder_files import UnsafeFileError, open_regular
from connectors.folder_source import display_path, is_storable_path, scan
from connectors.folder_watch import FolderWatcher, ReadyFile, WatchOptions
from ledger.core.clock import ManualClock
from tests.harness.waiting import wait_until

DEADLINE_S = 15.0
NOBODY = 65534
ODD_NAMES = [
    "line\nbreak.txt",
    "tab\tand\rreturn.txt",
    "bell\x07and\x1b[31mescape.txt",
    "\u202eexe.txt",  # right-to-left override
    "a..b.txt",
    "trailing.",
    " leading space.txt",
    "back\\slash.txt",
    "\u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c.txt",
    "emoji \U0001f600.txt",
    "n" * 251 + ".txt",  # 255 bytes: the longest name a component may have
    "%2e%2e%2fetc.txt",
    "$(touch pwned).txt",
]


def write(path: Path | bytes, data: bytes = b"data") -> None:
    with open(path, "wb") as handle:
        handle.write(data)


class Skips:
    """An ``on_skip`` recorder: ``{display path: reason}``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, path: str, reason: str) -> None:
        self.seen.append((path, reason))

    def reason(self, path: str) -> str:
        found = [reason for p, reason in self.seen if p == path]
        assert found, f"{path!r} was not reported; reported: {self.seen}"
        return found[0]


def listing(root: Path, **kwargs: Any) -> list[str]:
    return [entry.relative_path for entry in scan(root, **kwargs)]


def in_thread(function: Callable[[], Any], timeout_s: float = 5.0) -> Any:
    """Run ``function`` in a thread; fail (instead of hanging) if it blocks."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed back to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"blocked for more than {timeout_s} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def make_deep(root: Path, levels: int, name: str = "d") -> Path:
    """``levels`` nested folders under ``root`` (made through folder descriptors, so any
    depth works); returns the path of the deepest (it may be too long to use)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        created = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(created, b"deep")
        os.close(created)
    finally:
        os.close(fd)
    return Path(root, *([name] * levels))


def remove_deep(top: Path) -> None:
    """Remove a chain of nested folders made by ``make_deep`` without recursion (and
    without paths, which may be too long): down to the bottom, then up through ``..``."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    names: list[str] = []
    while True:
        with os.scandir(fd) as it:
            entries = list(it)
        folders = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        for entry in entries:
            if entry.name not in folders:
                os.unlink(entry.name, dir_fd=fd)
        if not folders:
            break
        below = os.open(folders[0], os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd, names = below, [*names, folders[0]]
    for name in reversed(names):
        parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        os.rmdir(name, dir_fd=parent)
        fd = parent
    os.close(fd)
    os.rmdir(top)


@contextlib.contextmanager
def as_nobody() -> Iterator[None]:
    """Run the block with the effective user and group ``nobody`` (root only)."""
    if os.geteuid() != 0:
        yield  # already an ordinary user: permissions apply as they are
        return
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@pytest.fixture
def drop(tmp_path: Path) -> Path:
    folder = tmp_path / "drop"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    write(folder / "secret.txt", b"the secret outside the drop folder")
    return folder


@pytest.fixture
def shared_drop() -> Iterator[Path]:
    """A drop folder ``nobody`` can reach (pytest's own temporary folders are 0700)."""
    base = Path(tempfile.mkdtemp(prefix="hostile-drop-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for path in base.rglob("*"):
            if not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(base)


# -- the folder source -----------------------------------------------------------------


def test_odd_names_are_listed_exactly_as_on_disk(drop: Path) -> None:
    for name in ODD_NAMES:
        write(drop / name)
    (drop / "sub\ndir").mkdir()
    write(drop / "sub\ndir" / "in\x01side.txt")
    write(drop / "...")  # hidden: ignored by default, listed when nothing is ignored
    expected = sorted([*ODD_NAMES, "sub\ndir/in\x01side.txt"])
    assert listing(drop) == expected
    assert listing(drop, ignore_patterns=()) == sorted([*expected, "..."])
    for entry in scan(drop):
        assert entry.absolute_path == drop / entry.relative_path
        assert entry.absolute_path.read_bytes() == b"data"


def test_names_that_are_not_utf8_are_refused_with_a_reason(drop: Path, caplog: Any) -> None:
    raw = os.fsencode(drop)
    write(raw + b"/bad\xff\xfe.txt")
    os.mkdir(raw + b"/dir\xc3\x28")
    write(raw + b"/dir\xc3\x28/inside.txt")
    write(drop / "good.txt")
    skips = Skips()
    with caplog.at_level(logging.WARNING, logger="connectors.folder_source"):
        assert listing(drop, on_skip=skips) == ["good.txt"]
    assert "not UTF-8" in skips.reason("bad\\xff\\xfe.txt")
    assert "not UTF-8" in skips.reason("dir\\xc3(")
    assert "bad\\xff\\xfe.txt" in caplog.text
    assert not is_storable_path(os.fsdecode(b"bad\xff"))
    assert display_path(os.fsdecode(b"a\xffb")) == "a\\xffb"


def test_links_to_outside_and_link_loops_are_never_followed(drop: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", drop / "file-link.txt")
    os.symlink(outside, drop / "dir-link")
    os.symlink("../outside/secret.txt", drop / "relative-link.txt")
    os.symlink(drop, drop / "loop-to-root")
    os.symlink("b", drop / "a")
    os.symlink("a", drop / "b")
    os.symlink(drop / "missing", drop / "dangling")
    write(drop / "real.txt")
    skips = Skips()
    assert in_thread(lambda: listing(drop, on_skip=skips)) == ["real.txt"]
    for name in ("file-link.txt", "dir-link", "relative-link.txt", "loop-to-root", "a", "b"):
        assert "symbolic link" in skips.reason(name)


def test_fifos_sockets_and_devices_are_refused_without_being_opened(drop: Path) -> None:
    os.mkfifo(drop / "pipe")  # no writer: opening it for reading would block
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(drop / "sock"))
    try:
        os.mknod(drop / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        devices = True
    except PermissionError:  # not root: no device nodes
        devices = False
    write(drop / "real.txt")
    skips = Skips()
    try:
        assert in_thread(lambda: listing(drop, on_skip=skips)) == ["real.txt"]
    finally:
        server.close()
    assert "FIFO" in skips.reason("pipe")
    assert "socket" in skips.reason("sock")
    if devices:
        assert "character device" in skips.reason("null")


def test_a_tree_deeper_than_the_recursion_limit_is_listed(drop: Path) -> None:
    deepest = make_deep(drop, 1_100)
    try:
        found = listing(drop)
        assert found == ["d/" * 1_100 + "f.txt"]
        assert (deepest / "f.txt").read_bytes() == b"deep"
    finally:
        remove_deep(drop / "d")


def test_paths_longer_than_the_system_allows_are_refused_with_a_reason(drop: Path) -> None:
    write(drop / "short.txt")
    make_deep(drop, 1_100, name="ddd")  # 4,400 bytes: past PATH_MAX (4,096) on Linux
    skips = Skips()
    try:
        assert listing(drop, on_skip=skips) == ["short.txt"]
    finally:
        remove_deep(drop / "ddd")
    (path, reason) = skips.seen[0]
    assert path.startswith("ddd/ddd/") and "too long" in reason


def test_unreadable_files_and_folders_are_refused_for_a_user(shared_drop: Path) -> None:
    write(shared_drop / "open.txt")
    write(shared_drop / "locked.txt")
    (shared_drop / "locked.txt").chmod(0)
    (shared_drop / "closed").mkdir()
    write(shared_drop / "closed" / "inside.txt")
    (shared_drop / "closed").chmod(0)
    skips = Skips()
    with as_nobody():
        found = listing(shared_drop, on_skip=skips)
        with pytest.raises(PermissionError):
            open_regular(shared_drop, "locked.txt")
    assert found == ["open.txt"]
    assert "permission denied" in skips.reason("locked.txt").lower()
    assert "unreadable directory" in skips.reason("closed")
    if os.geteuid() == 0:  # root: the same folder is read whole (mode bits do not bind it)
        assert listing(shared_drop) == ["closed/inside.txt", "locked.txt", "open.txt"]


# -- reading a listed file: open_regular -----------------------------------------------


def test_open_regular_reads_a_listed_file_and_sees_a_change_while_reading(drop: Path) -> None:
    write(drop / "doc.txt", b"version 1")
    (entry,) = scan(drop)
    with open_regular(drop, entry.relative_path) as handle:
        assert handle.read() == b"version 1"
        assert not handle.changed()
        handle.check_unchanged()
    with open_regular(drop, entry.relative_path) as handle:
        first = handle.read(3)
        with open(drop / "doc.txt", "ab") as writer:
            writer.write(b" and more")
        assert first == b"ver"
        with pytest.raises(UnsafeFileError, match="changed while"):
            handle.check_unchanged()


def test_open_regular_refuses_swaps_made_after_the_scan(drop: Path, outside: Path) -> None:
    (drop / "sub").mkdir()
    for name in ("file.txt", "pipe.txt", "gone.txt", "sub/inner.txt"):
        write(drop / name)
    entries = {e.relative_path for e in scan(drop)}
    assert entries == {"file.txt", "pipe.txt", "gone.txt", "sub/inner.txt"}
    # after the scan: a file becomes a link outside, another a FIFO, one vanishes, and
    # the folder holding the last one becomes a link to the outside folder
    (drop / "file.txt").unlink()
    os.symlink(outside / "secret.txt", drop / "file.txt")
    (drop / "pipe.txt").unlink()
    os.mkfifo(drop / "pipe.txt")
    (drop / "gone.txt").unlink()
    shutil.rmtree(drop / "sub")
    os.symlink(outside, drop / "sub")
    write(outside / "inner.txt", b"outside")
    with pytest.raises(OSError) as link:
        open_regular(drop, "file.txt")
    assert link.value.errno == errno.ELOOP
    with pytest.raises(UnsafeFileError, match="FIFO"):
        in_thread(lambda: open_regular(drop, "pipe.txt"))
    with pytest.raises(FileNotFoundError):
        open_regular(drop, "gone.txt")
    with pytest.raises(OSError) as parent:
        open_regular(drop, "sub/inner.txt")
    assert parent.value.errno in (errno.ELOOP, errno.ENOTDIR)


@pytest.mark.parametrize("path", ["../outside/secret.txt", "/etc/passwd", "a/./b", "a//b", ""])
def test_open_regular_refuses_paths_that_leave_the_folder(drop: Path, path: str) -> None:
    with pytest.raises(UnsafeFileError, match="not a path below"):
        open_regular(drop, path)


# -- the watcher -----------------------------------------------------------------------


class Watch:
    """A started watcher on a manual clock, recording batches and refusals."""

    def __init__(self, root: Path) -> None:
        self.clock = ManualClock()
        self.handed: list[ReadyFile] = []
        self.skips = Skips()
        options = WatchOptions(settle_s=1.0, batch_max_wait_s=0.0)
        self.watcher = FolderWatcher(
            [root],
            self.handed.extend,
            options=options,
            clock=self.clock,  # type: ignore[arg-type]
            on_skip=self.skips,
        )
        self.watcher.start()

    @property
    def names(self) -> list[str]:
        return sorted(f.relative_path for f in self.handed)

    def until(self, predicate: Callable[[], bool]) -> None:
        def ticked() -> bool:
            in_thread(self.watcher.tick)  # a tick that blocked would fail here
            if predicate():
                return True
            self.clock.advance(0.5)
            return False

        wait_until(ticked, DEADLINE_S, 0.02, what=lambda: f"handed off: {self.names}")

    def settle(self, seconds: float = 0.5) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            in_thread(self.watcher.tick)
            self.clock.advance(1.0)
            time.sleep(0.02)


@pytest.fixture
def watch(drop: Path) -> Iterator[Callable[[], Watch]]:
    made: list[Watch] = []

    def start() -> Watch:
        made.append(Watch(drop))
        return made[-1]

    yield start
    for each in made:
        each.watcher.stop()


def test_watcher_hands_odd_names_on_exactly(watch: Callable[[], Watch], drop: Path) -> None:
    w = watch()
    for name in ODD_NAMES:
        write(drop / name)
    w.until(lambda: len(w.handed) == len(ODD_NAMES))
    assert w.names == sorted(ODD_NAMES)
    for file in w.handed:
        assert file.path == drop / file.relative_path


def test_watcher_refuses_names_that_are_not_utf8_once(
    watch: Callable[[], Watch], drop: Path, caplog: Any
) -> None:
    w = watch()
    bad = os.fsencode(drop) + b"/bad\xff.txt"
    with caplog.at_level(logging.WARNING, logger="connectors.folder_watch"):
        with open(bad, "wb") as handle:
            for _ in range(5):  # several events for the same file
                handle.write(b"x")
                handle.flush()
        write(drop / "good.txt")
        w.until(lambda: w.names == ["good.txt"])
        w.settle()
    assert w.names == ["good.txt"]
    assert w.skips.seen == [("bad\\xff.txt", "name in bytes that are not UTF-8: rename it")]
    assert caplog.text.count("bad\\xff.txt") == 1


def test_watcher_never_opens_special_files_or_follows_link_loops(
    watch: Callable[[], Watch], drop: Path, outside: Path
) -> None:
    w = watch()
    os.mkfifo(drop / "pipe.txt")
    with contextlib.suppress(PermissionError):
        os.mknod(drop / "null.txt", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.symlink(drop, drop / "loop")
    os.symlink(outside, drop / "out")
    write(outside / "late-secret.txt")
    write(drop / "real.txt")
    w.until(lambda: w.names == ["real.txt"])
    w.settle()
    assert w.names == ["real.txt"]


def test_watcher_takes_a_tree_deeper_than_the_recursion_limit(
    watch: Callable[[], Watch], drop: Path
) -> None:
    deepest = make_deep(drop, 1_100)
    try:
        w = watch()
        w.until(lambda: w.names == ["d/" * 1_100 + "f.txt"])
        write(deepest / "later.txt")
        w.until(lambda: len(w.names) == 2)
        assert w.watcher.is_armed(drop)
    finally:
        remove_deep(drop / "d")


def test_watcher_drops_a_file_that_vanishes_before_it_settles(
    watch: Callable[[], Watch], drop: Path
) -> None:
    w = watch()
    with open(drop / "brief.txt", "wb") as handle:
        handle.write(b"x")
        handle.flush()
        w.until(lambda: drop / "brief.txt" in w.watcher.pending_paths())
        (drop / "brief.txt").unlink()
    write(drop / "stays.txt")
    w.until(lambda: w.names == ["stays.txt"])
    w.settle()
    assert w.names == ["stays.txt"]
    assert w.watcher.pending_paths() == frozenset()
