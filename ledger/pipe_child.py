"""A child ``python -m <module>`` spoken to over its standard input and output.

Work that is pure Python under the interpreter lock (the anchoring service's nonce search,
the pipeline's hashing of small files) gets another core only in another process. Both
run such a child the same way: started on first use, fed requests on its standard input
and read back on its standard output (binary pipes), replaced when it has died. The child
exits at the end of its input, so it ends with its parent, also on SIGKILL (the pipe
closes). The protocols themselves (what a request and an answer are) belong to the
callers (``ledger.anchor.mining``, ``tasks.hash_process``).

Not thread-safe: each caller holds its own lock around a request and its answer.

Shared by the services and the pipeline; process plumbing, so it stays out of the pure
``ledger.core``.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from typing import IO

__all__ = ["PipeChild", "read_exactly"]


class PipeChild:
    """The child ``python -m module`` (started by the first ``send`` after none runs).

    Args:
        module: the module the child runs (``python -m``).
        python: the interpreter to start (default: this one).
    """

    def __init__(self, module: str, *, python: str = sys.executable) -> None:
        self._command = [python, "-m", module]
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The running child, if one was started and not stopped (it may have died)."""
        return self._child

    def send(self, data: bytes) -> None:
        """Write ``data`` to the child's input (a new child when none runs or it died).

        Raises:
            OSError: the child cannot be started, or its input is closed.
        """
        child = self._child
        if child is None or child.poll() is not None:
            child = self._child = subprocess.Popen(
                self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        assert child.stdin is not None
        child.stdin.write(data)
        child.stdin.flush()

    def receive(self, size: int) -> bytes:
        """Exactly ``size`` bytes of the child's output.

        Raises:
            EOFError: no child runs, or its output ended first (it died).
        """
        child = self._child
        if child is None or child.stdout is None:
            raise EOFError("no child process runs")
        return read_exactly(child.stdout, size)

    def stop(self) -> None:
        """Close the child's pipes and wait for it (killed after 5 s); no-op if none runs."""
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


def read_exactly(stream: IO[bytes], size: int) -> bytes:
    """Exactly ``size`` bytes of ``stream`` (a child's output, or the child's own input).

    Raises:
        EOFError: the stream ended first.
    """
    data = stream.read(size)
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError(f"the pipe closed after {len(data)} of {size} bytes")
        data += chunk
    return data
