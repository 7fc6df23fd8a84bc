"""Small files hashed in a child process: ``HashProcess`` (and its child, ``main``).

Why a process: a 4 KiB file costs its per-file work under the interpreter lock (open,
stat, read, digest: about 15-20 us of Python between system calls), not its bytes, so
threads do not spread it over cores (``tasks.hashing``). A run over an archive of small
files is then one core's work: the flow's process hashes, records every document and
publishes on that core while the other waits. A child ``python -m tasks.hash_process``
hashes the batches of small files on the other core, and only the results (32-byte
digests and sizes) come back.

The child opens each file exactly as the flow's process would (``hash_files`` with
``root``: below the folder, no symlink followed, regular files only), so the safety rules
and the results are the same; it imports only ``tasks.hashing`` and its folder helpers.

Protocol (binary pipes, each message a 4-byte little-endian length then a pickle): the
parent sends ``(root, paths, attempts)`` (``str``, ``list[str]``, ``int``: passes over a
file that changes while it is read, ``tasks.hashing``); the child answers one tuple per
path, in order: ``(sha256, size_bytes, None)`` with the hex digest, or
``(None, None, error)``. The child exits at the end of its input, so it ends with its
parent (also on SIGKILL: the pipe closes). Anything going wrong with the child (it cannot
start, dies, answers something malformed) makes that batch be hashed in this process,
with a warning; the next batch starts a new child (``ledger.pipe_child``). Pickles are
read only from our own child, over a pipe no one else holds.
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from ledger.pipe_child import PipeChild, read_exactly
from tasks.hashing import DEFAULT_HASH_ATTEMPTS, HashResult, StrPath, hash_files

__all__ = [
    "HashProcess",
    "child_requests",
    "main",
    "pipe_message",
    "read_message",
    "shared_hash_process",
]

log = logging.getLogger(__name__)

_LENGTH_BYTES = 4


class HashProcess:
    """``hash_files(paths, root=root, max_workers=1)`` run by a child process (started on
    first use).

    Thread-safe (one batch at a time: the child is one core's worth of hashing). ``close()``
    ends the child.

    Args:
        python: the interpreter to start (default: this one).
        module: the child's module (``python -m``): this one, or a test's that wraps it.
    """

    def __init__(self, *, python: str = sys.executable, module: str = "tasks.hash_process") -> None:
        self._lock = threading.Lock()
        self._child = PipeChild(module, python=python)

    def hash_files(
        self, paths: Sequence[StrPath], *, root: StrPath, attempts: int = DEFAULT_HASH_ATTEMPTS
    ) -> list[HashResult]:
        """One ``HashResult`` per path, in order, as ``tasks.hashing.hash_files(paths,
        root=root, max_workers=1, attempts=attempts)`` returns them (``path`` is the
        caller's object).

        Args:
            paths: files relative to ``root`` (``ScanEntry.relative_path``).
            root: the scanned folder.
            attempts: passes over a file that changes while it is read (>= 1).
        """
        if not paths:
            return []
        request = (os.fspath(root), [os.fspath(p) for p in paths], attempts)
        with self._lock:
            try:
                self._child.send(pipe_message(request))
                answers = read_message(self._child.receive)
                if not isinstance(answers, list) or len(answers) != len(paths):
                    raise ValueError("hashing child answered a malformed reply")
                return [_result(path, answer) for path, answer in zip(paths, answers, strict=True)]
            except (OSError, ValueError, TypeError, EOFError, pickle.UnpicklingError) as exc:
                log.warning("hashing child failed (%s); hashing this batch in-process", exc)
                self._child.stop()
        return hash_files(paths, root=root, max_workers=1, attempts=attempts)

    def close(self) -> None:
        """End the child (it exits at end of input); no-op if none runs."""
        with self._lock:
            self._child.stop()


_shared: dict[int, HashProcess] = {}
_shared_lock = threading.Lock()


def shared_hash_process() -> HashProcess:
    """The process's one ``HashProcess`` (keyed by process id: a forked child has none of
    its parent's children). Its child ends with this process."""
    with _shared_lock:
        worker = _shared.get(os.getpid())
        if worker is None:
            worker = _shared[os.getpid()] = HashProcess()
        return worker


def _result(path: StrPath, answer: Any) -> HashResult:
    sha256, size, error = answer
    if error is not None:
        return HashResult(path, error=str(error))
    if not isinstance(sha256, str) or len(sha256) != 64 or not isinstance(size, int):
        raise ValueError("hashing child answered a malformed result")
    return HashResult(path, sha256=sha256, size_bytes=size)


def pipe_message(value: Any) -> bytes:
    """``value`` as one message of the protocol (module docstring): length, then pickle."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return len(payload).to_bytes(_LENGTH_BYTES, "little") + payload


def read_message(read: Callable[[int], bytes]) -> Any:
    """The next message's value, read with ``read(n)`` (exactly ``n`` bytes, or
    ``EOFError``). Only for a pipe to or from our own child: it unpickles."""
    size = int.from_bytes(read(_LENGTH_BYTES), "little")
    return pickle.loads(read(size))  # noqa: S301 - our own child's pipe


def child_requests() -> Iterator[Any]:
    """In a child: each request its parent sends on standard input, until the input ends
    (the parent closed the pipe or died)."""
    read = partial(read_exactly, sys.stdin.buffer)
    while True:
        try:
            yield read_message(read)
        except EOFError:
            return


def main() -> None:
    """The child: answer each ``(root, paths, attempts)`` request on standard input until
    its end."""
    stdout = sys.stdout.buffer
    for root, names, attempts in child_requests():
        results = hash_files(names, root=root, max_workers=1, attempts=attempts)
        try:
            stdout.write(pipe_message([(r.sha256, r.size_bytes, r.error) for r in results]))
            stdout.flush()
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main()
