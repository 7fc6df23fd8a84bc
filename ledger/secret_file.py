"""Writing a secret (an API key, an HMAC key) to a file only its owner can read.

The file is created with mode 0600 in the ``open`` call itself, so there is no moment at
which it exists with the process's default (umask) permissions and holds the secret; an
existing file is truncated and set to 0600 too (``fchmod``), whatever its mode was.

Shared by the bundled stack (``ledger.stack``: ``api-key``, ``callback-secret``) and any
other writer of secrets; it is file I/O, so it stays out of the pure ``ledger.core``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SECRET_FILE_MODE", "write_secret_file"]

#: Read and write for the owner only.
SECRET_FILE_MODE = 0o600


def write_secret_file(path: Path, secret: bytes) -> Path:
    """Write ``secret`` and a newline to ``path`` with mode 0600 (created or replaced).

    Args:
        path: the file; its folder must exist.
        secret: the raw bytes to keep (an ASCII key as ``key.encode()``).

    Returns:
        ``path``.

    Raises:
        OSError: the folder is missing or not writable, the disk is full, ...
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), SECRET_FILE_MODE)  # an existing file keeps its old mode
        handle.write(secret + b"\n")
    return path
