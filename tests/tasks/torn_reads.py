"""A reader wrapper that changes a file between two reads of it, deterministically.

``Race`` wraps ``os.read`` and ``os.readv``: after a read of the target file (found by its
inode and device, whatever the path or descriptor used), it rewrites the file in place,
appends to it or truncates it, once or on every read. No timing is involved: the change
lands exactly between two reads of one hashing pass, as a writer racing the hash would.

Used by the torn-read tests in this process (``install``) and in the hashing child
(``tests.tasks.torn_hash_child``, configured by ``RACE_ENV``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["RACE_ENV", "Action", "Race", "settle_in_the_past"]

#: Environment variable holding a ``Race`` as JSON for the hashing child.
RACE_ENV = "NOTARY_TEST_TORN_RACE"

Action = Literal["rewrite", "append", "truncate"]


@dataclass
class Race:
    """Change ``path`` after a read of it.

    Attributes:
        path: the file (absolute). action: what to do to it.
        data: the bytes written (``rewrite``: from offset 0, in place; ``append``: at the end).
        keep_bytes: ``truncate`` to this many bytes.
        times: how many reads trigger the change (``0``: every read).
    """

    path: str
    action: Action
    data: bytes = b""
    keep_bytes: int = 0
    times: int = 1
    fired: int = field(default=0)

    def to_json(self) -> str:
        fields = {"path": self.path, "action": self.action, "data": self.data.hex()}
        return json.dumps(fields | {"keep_bytes": self.keep_bytes, "times": self.times})

    @classmethod
    def from_json(cls, text: str) -> Race:
        raw: dict[str, Any] = json.loads(text)
        return cls(
            raw["path"],
            raw["action"],
            bytes.fromhex(raw["data"]),
            keep_bytes=raw["keep_bytes"],
            times=raw["times"],
        )

    def after_read(self, fd: int) -> None:
        """Apply the change if ``fd`` is the target and the change is still due."""
        if self.times and self.fired >= self.times:
            return
        try:
            target = os.stat(self.path)
        except FileNotFoundError:
            return
        st = os.fstat(fd)
        if (st.st_ino, st.st_dev) != (target.st_ino, target.st_dev):
            return
        self.fired += 1
        if self.action == "rewrite":
            with open(self.path, "r+b") as writer:
                writer.write(self.data)
        elif self.action == "append":
            with open(self.path, "ab") as writer:
                writer.write(self.data)
        else:
            os.truncate(self.path, self.keep_bytes)

    def install(self, setattr_: Callable[[Any, str, Any], None]) -> None:
        """Wrap ``os.read`` and ``os.readv`` with ``setattr_`` (``monkeypatch.setattr``,
        or ``setattr`` in a child that ends with its test)."""
        read, readv = os.read, os.readv

        def wrapped_read(fd: int, n: int) -> bytes:
            data = read(fd, n)
            self.after_read(fd)
            return data

        def wrapped_readv(fd: int, buffers: Any) -> int:
            got = readv(fd, buffers)
            self.after_read(fd)
            return got

        setattr_(os, "read", wrapped_read)
        setattr_(os, "readv", wrapped_readv)


def settle_in_the_past(path: Path) -> None:
    """Date ``path``'s modification an hour back, as a file written earlier is: a write
    made during the hash then moves it forward, whatever the clock's tick."""
    past = os.stat(path).st_mtime_ns - 3600 * 10**9
    os.utime(path, ns=(past, past))
