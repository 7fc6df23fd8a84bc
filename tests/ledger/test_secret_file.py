"""``ledger.secret_file.write_secret_file``: owner-only files, also over an existing one."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ledger.secret_file import SECRET_FILE_MODE, write_secret_file


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_is_owner_only_and_holds_the_secret_and_a_newline(tmp_path: Path) -> None:
    path = tmp_path / "api-key"
    assert write_secret_file(path, b"s3cret") == path
    assert path.read_bytes() == b"s3cret\n"
    assert mode(path) == SECRET_FILE_MODE == 0o600


def test_an_existing_readable_file_is_replaced_and_made_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "callback-secret"
    path.write_bytes(b"an older and longer secret\n")
    path.chmod(0o644)
    write_secret_file(path, b"new")
    assert path.read_bytes() == b"new\n"
    assert mode(path) == 0o600


def test_a_missing_folder_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_secret_file(tmp_path / "missing" / "api-key", b"x")
