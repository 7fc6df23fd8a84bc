"""Debian packages the tests need (a browser, a daemon, a command), installed when missing.

CI runs as root on a fresh machine with Debian's package index reachable, so a test that
needs, say, ``litecoind`` installs it with ``apt-get`` rather than skipping; on a machine
where that cannot be done, the caller says what is missing and fails (or skips outside CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["apt_install"]

INSTALL_TIMEOUT_S = 900


def apt_install(package: str, *, timeout_s: float = INSTALL_TIMEOUT_S) -> str:
    """``apt-get update`` then ``apt-get install -y PACKAGE`` (as root): what went wrong,
    or "" on success. Each command may take up to ``timeout_s`` seconds."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not running as root with apt-get, so it cannot be installed here"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", package]):
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=timeout_s
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(command)} failed: {exc}"
        if done.returncode != 0:
            return f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}"
    return ""
