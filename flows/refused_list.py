"""The full list of the entries a folder run refused, in a file of the data folder.

A folder with many links or special files (``/usr/share/doc`` has dozens) would fill the
run's notes; the summary keeps only the count (``RunSummary.refused``) and the path of
this list (``RunSummary.refused_list``), which the command line prints in one line.

The file is ``<data_dir>/runs/refused-run-<run id>.txt`` (the audit store's run id), one
``<relative path>\\t<reason>`` line per refused entry, in scan order. The folder is created
owner-only (0700) and the file is created owner-only (0600, in the ``open`` call): file
names can say more than their owner wants others to read.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from ledger.secret_file import SECRET_FILE_MODE

__all__ = ["RefusedList", "refused_list_path"]

#: Mode of the ``runs`` folder: the owner only.
RUNS_FOLDER_MODE = 0o700


def refused_list_path(data_dir: Path, run_id: int) -> Path:
    """Where run ``run_id``'s refused entries are listed (module docstring)."""
    return data_dir / "runs" / f"refused-run-{run_id}.txt"


class RefusedList:
    """Appends refused entries to ``path``; the file is created at the first one only.

    Use as a context manager (``with RefusedList(path) as refused: refused.add(...)``);
    ``written`` is the path once something was written, else ``None``.

    Raises (from ``add``):
        OSError: the data folder is not writable, the disk is full, ...
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written: Path | None = None
        self._handle: IO[str] | None = None

    def add(self, relative_path: str, reason: str) -> None:
        """Write one line: the entry's printable relative path and why it was refused."""
        if self._handle is None:
            self.path.parent.mkdir(mode=RUNS_FOLDER_MODE, parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            fd = os.open(self.path, flags, SECRET_FILE_MODE)
            os.fchmod(fd, SECRET_FILE_MODE)  # a file left by an older store keeps its mode
            self._handle = os.fdopen(fd, "w", encoding="utf-8")
            self.written = self.path
        self._handle.write(f"{relative_path}\t{reason}\n")

    def close(self) -> None:
        """Close the file (if one was opened)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
