"""Tests of connectors.folder_source.scan on real trees in tmp_path."""

from __future__ import annotations

import fnmatch
import logging
import os
from pathlib import Path

import pytest

import connectors.folder_source as folder_source
from connectors.folder_source import DEFAULT_IGNORE_PATTERNS, ScanEntry, scan, source_name


def write(path: Path, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the drop folder whose content must never be listed."""
    secret = tmp_path / "outside"
    write(secret / "secret.txt", b"top secret")
    write(secret / "deeper" / "more.txt", b"more")
    return secret


@pytest.fixture
def drop(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "drop"
    write(root / "b.pdf", b"bbb")
    write(root / "a.txt", b"a")
    write(root / "a" / "z.csv", b"zz")
    write(root / "a-b" / "c.txt")
    write(root / "sub" / "deep" / "x.json", b"{}")
    write(root / ".hidden", b"h")
    write(root / ".git" / "config")
    write(root / "sub" / "upload.pdf.part")
    write(root / "~$report.docx")
    write(root / ".report.docx.swp")
    write(root / "sub" / "tmpfile.tmp")
    os.symlink(outside / "secret.txt", root / "link-to-file.txt")
    os.symlink(outside, root / "link-to-dir")
    os.symlink(root / "missing", root / "dangling.txt")
    os.symlink(root / "sub", root / "sub" / "loop")
    os.mkfifo(root / "pipe")
    return root


def test_lists_regular_files_sorted_relative_posix(drop: Path) -> None:
    entries = list(scan(drop))
    assert [e.relative_path for e in entries] == [
        "a-b/c.txt",
        "a.txt",
        "a/z.csv",
        "b.pdf",
        "sub/deep/x.json",
    ]
    assert [e.relative_path for e in entries] == sorted(e.relative_path for e in entries)


def test_entries_carry_absolute_path_size_and_mtime(drop: Path) -> None:
    os.utime(drop / "b.pdf", (1_600_000_000, 1_600_000_000))
    by_path = {e.relative_path: e for e in scan(drop)}
    entry = by_path["b.pdf"]
    assert isinstance(entry, ScanEntry)
    assert entry.absolute_path == drop.resolve() / "b.pdf"
    assert entry.absolute_path.is_absolute()
    assert (entry.size_bytes, entry.mtime_s) == (3, 1_600_000_000)
    assert by_path["sub/deep/x.json"].absolute_path.read_bytes() == b"{}"


def test_never_follows_symlinks(drop: Path, outside: Path) -> None:
    listed = {e.absolute_path for e in scan(drop)}
    assert all(outside not in p.parents for p in listed)
    names = {e.relative_path for e in scan(drop)}
    assert not names & {"link-to-file.txt", "link-to-dir/secret.txt", "dangling.txt"}
    assert not any(n.startswith("sub/loop") for n in names)


def test_root_given_through_a_symlink_is_scanned(tmp_path: Path, drop: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(drop, alias)
    assert [e.relative_path for e in scan(alias)] == [e.relative_path for e in scan(drop)]
    assert source_name(alias) == f"folder:{drop.resolve()}"


def test_ignore_patterns_apply_to_files_and_directories(drop: Path) -> None:
    assert DEFAULT_IGNORE_PATTERNS == (".*", "*.part", "~$*", "*.swp", "*.tmp")
    everything = {e.relative_path for e in scan(drop, ignore_patterns=())}
    assert {".hidden", ".git/config", "sub/upload.pdf.part", "~$report.docx"} <= everything
    assert {".report.docx.swp", "sub/tmpfile.tmp"} <= everything
    only_txt_ignored = {e.relative_path for e in scan(drop, ignore_patterns=["*.txt", "sub"])}
    assert "a.txt" not in only_txt_ignored and "a/z.csv" in only_txt_ignored
    assert not any(p.startswith("sub/") for p in only_txt_ignored)


def test_empty_folder_and_bad_roots(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert list(scan(tmp_path / "empty")) == []
    with pytest.raises(FileNotFoundError):
        list(scan(tmp_path / "missing"))
    with pytest.raises(NotADirectoryError):
        list(scan(write(tmp_path / "file.txt")))


def test_unreadable_directory_is_skipped_with_warning(drop: Path, monkeypatch, caplog) -> None:
    real_scandir = os.scandir

    def failing_scandir(path):  # the only way to deny root: inject the kernel's answer
        if Path(path).name == "deep":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(folder_source.os, "scandir", failing_scandir)
    with caplog.at_level(logging.WARNING, logger="connectors.folder_source"):
        names = [e.relative_path for e in scan(drop)]
    assert "sub/deep/x.json" not in names and "b.pdf" in names
    assert "unreadable directory" in caplog.text and "deep" in caplog.text


def test_file_vanishing_during_scan_is_skipped(drop: Path, monkeypatch, caplog) -> None:
    real_access = os.access

    def access_then_delete_next(path, mode, **kwargs):
        if str(path).endswith("a.txt"):  # b.pdf is listed already, not yet stat'ed
            (drop / "b.pdf").unlink()
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(folder_source.os, "access", access_then_delete_next)
    with caplog.at_level(logging.WARNING, logger="connectors.folder_source"):
        names = [e.relative_path for e in scan(drop)]
    assert "b.pdf" not in names and "a.txt" in names
    assert "unreadable file" in caplog.text and "No such file" in caplog.text


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and lists whatever the mode")
def test_permission_denied_entries_are_skipped(drop: Path, caplog) -> None:
    (drop / "b.pdf").chmod(0)
    (drop / "sub").chmod(0)
    try:
        with caplog.at_level(logging.WARNING, logger="connectors.folder_source"):
            names = [e.relative_path for e in scan(drop)]
    finally:
        (drop / "sub").chmod(0o755)
    assert names == ["a-b/c.txt", "a.txt", "a/z.csv"]
    assert caplog.text.count("skipping unreadable") == 2


def test_scan_is_lazy(tmp_path: Path) -> None:
    for i in range(50):
        write(tmp_path / "many" / f"d{i:02}" / "f.txt")
    iterator = scan(tmp_path / "many")
    assert next(iterator).relative_path == "d00/f.txt"


@pytest.mark.parametrize(
    "patterns", [DEFAULT_IGNORE_PATTERNS, (), ("[ab]?.txt", "*[!x]", "a*b*c"), ("?",)]
)
def test_ignore_matcher_agrees_with_fnmatchcase(patterns: tuple[str, ...]) -> None:
    names = [".git", "x.part", "~$a.docx", "a.swp", "b.tmp", "ab.txt", "aXbYc", "A.TXT"]
    names += ["a", "x", "report.pdf", "line\nbreak.tmp", ".", "..", "tmp", "part"]
    ignored = folder_source.ignore_matcher(patterns)
    for name in names:
        expected = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        assert ignored(name) is expected, (name, patterns)
