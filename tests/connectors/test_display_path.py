"""Names are shown one way everywhere: ``display_path`` (notes, refusals, log lines)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from connectors.folder_source import ScanEntry, display_path, scan
from flows.run_summary import RunSummary
from tasks.hashing import HashResult

HOSTILE = [
    "plain.txt",
    "a b+c.txt",
    "line\nbreak.txt",
    "line\\nbreak.txt",  # a backslash and an n: shown apart from the newline
    "cr\rtab\t.txt",
    "esc\x1b[31mred.txt",
    "nul\x7fdel.txt",
    "c1\x85.txt",
    "sep\u2028.txt",
    "résumé.txt",
    "bad\udcffbyte.txt",  # not UTF-8, as os gives it
    "\x85",
    "\udc85",
]


def test_every_name_is_one_printable_line_and_no_two_look_the_same() -> None:
    shown = [display_path(name) for name in HOSTILE]
    for text in shown:
        assert text.isprintable(), text
        text.encode("utf-8")  # writable anywhere
    assert len(set(shown)) == len(HOSTILE)
    assert display_path("line\nbreak.txt") == "line\\nbreak.txt"
    assert display_path("line\\nbreak.txt") == "line\\\\nbreak.txt"
    assert display_path("bad\udcffbyte.txt") == "bad\\xffbyte.txt"
    assert display_path("résumé.txt") == "résumé.txt"


def test_a_run_note_and_a_refusal_show_a_newline_escaped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    summary = RunSummary("/drop", "c", "00" * 32)
    entry = ScanEntry("dir/line\nbreak.txt", tmp_path / "x", 1, 0.0)
    summary.add_hashed([entry], [HashResult(entry.relative_path, error="FileChangedError: x")])
    assert summary.errors == ["dir/line\\nbreak.txt: FileChangedError: x"]

    os.mkfifo(tmp_path / "pipe\nname")
    skipped: list[str] = []
    with caplog.at_level(logging.DEBUG, logger="connectors.folder_source"):
        assert list(scan(tmp_path, on_skip=lambda path, _why: skipped.append(path))) == []
    assert skipped == ["pipe\\nname"]
    assert any("pipe\\nname" in r.getMessage() for r in caplog.records)
    assert not any("\n" in r.getMessage() for r in caplog.records)
