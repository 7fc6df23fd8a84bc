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
parent sends ``(root, paths)`` (``str``, ``list[str]``); the child answers one tuple per
path, in order: ``(sha256, size_bytes, None)`` with the hex digest, or
``(None, None, error)``. The child exits at the end of its input, so it ends with its
parent (also on SIGKILL: the pipe closes). Anything going wrong with the child (it cannot
start, dies, answers something malformed) makes that batch be hashed in this process,
with a warning; the next batch starts a new child. Pickles are read only from our own
child, over a pipe no one else holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

from tasks.hashing import HashResult, StrPath, hash_files

__all__ = ["HashProcess", "main", "shared_hash_process"]

log = logging.getLogger(__name__)

_LENGTH_BYTES = 4


class HashProcess:
    """``hash_files(paths, root=root, max_workers=1)`` run by a child process (started on
    first use).

    Thread-safe (one batch at a time: the child is one core's worth of hashing). ``close()``
    ends the child.

    Args:
        python: the interpreter to start (default: this one).
    """

    def __init__(self, *, python: str = sys.executable) -> None:
        self._python = python
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None

    def hash_files(self, paths: Sequence[StrPath], *, root: StrPath) -> list[HashResult]:
        """One ``HashResult`` per path, in order, as ``tasks.hashing.hash_files(paths,
        root=root, max_workers=1)`` returns them (``path`` is the caller's object).

        Args:
            paths: files relative to ``root`` (``ScanEntry.relative_path``).
            root: the scanned folder.
        """
        if not paths:
            return []
        names = [os.fspath(p) for p in paths]
        with self._lock:
            try:
                answers = self._ask(os.fspath(root), names)
                return [_result(path, answer) for path, answer in zip(paths, answers, strict=True)]
            except (OSError, ValueError, TypeError, EOFError, pickle.UnpicklingError) as exc:
                log.warning("hashing child failed (%s); hashing this batch in-process", exc)
                self._stop()
        return hash_files(paths, root=root, max_workers=1)

    def _ask(self, root: str, names: list[str]) -> list[tuple[Any, Any, Any]]:
        child = self._child
        if child is None or child.poll() is not None:
            child = self._child = subprocess.Popen(
                [self._python, "-m", "tasks.hash_process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        assert child.stdin is not None and child.stdout is not None
        _write_message(child.stdin, (root, names))
        answers = _read_message(child.stdout)
        if not isinstance(answers, list) or len(answers) != len(names):
            raise ValueError("hashing child answered a malformed reply")
        return answers

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a dead child
                    stream.close()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def close(self) -> None:
        """End the child (it exits at end of input); no-op if none runs."""
        with self._lock:
            self._stop()


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


def _write_message(stream: IO[bytes], value: Any) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(payload).to_bytes(_LENGTH_BYTES, "little") + payload)
    stream.flush()


def _read_message(stream: IO[bytes]) -> Any:
    size = int.from_bytes(_read_exactly(stream, _LENGTH_BYTES), "little")
    return pickle.loads(_read_exactly(stream, size))  # noqa: S301 - our own child's pipe


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError("hashing pipe closed")
        data += chunk
    return data


def main() -> None:
    """The child: answer each ``(root, paths)`` request on standard input until its end."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            root, names = _read_message(stdin)
        except EOFError:
            return  # end of input: the parent closed the pipe or died
        results = hash_files(names, root=root, max_workers=1)
        answer = [(r.sha256, r.size_bytes, r.error) for r in results]
        try:
            _write_message(stdout, answer)
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main()
