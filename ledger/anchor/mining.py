"""The nonce search in a child process: ``MiningProcess`` (and its child, ``main``).

Why a process: ``chain.mine`` is pure Python holding the interpreter lock for about
``2**difficulty_bits`` hashes per block, and the bundled stack (``notary up``) runs the
node, wallet, publishing API and anchoring service in one interpreter. While a run
publishes, an anchor waits for its confirmations almost all the time, so the miner works
almost all the time: py-spy put it at 18-25 % of the stack's samples in a 100,000-entry
run, time the node and API could not have. In a child process it runs on the other core.

Protocol (binary pipes): the parent writes an 80-byte header (``BlockHeader.marshal``);
the child answers 5 bytes: ``b"+"`` and the little-endian nonce ``mine`` found counting
from the header's own, or ``b"!"`` and four zero bytes when every nonce up to ``2**32-1``
failed (``MiningExhausted``). The child exits at end of input, so it ends with its parent
(also on SIGKILL: the pipe closes). Anything going wrong with the child (it cannot start,
dies, answers nonsense) makes that block be mined in this process, with a warning; the
next block starts a new child (``ledger.pipe_child``).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading

from ledger.anchor.chain import MiningExhausted, mine
from ledger.core.pow.header import BlockHeader
from ledger.pipe_child import PipeChild, read_exactly

__all__ = ["MiningProcess", "main"]

log = logging.getLogger(__name__)

_HEADER_BYTES = 80
_FOUND, _EXHAUSTED = b"+", b"!"


class MiningProcess:
    """``mine`` run by a child ``python -m ledger.anchor.mining`` (started on first use).

    Thread-safe (one search at a time). ``close()`` ends the child.

    Args:
        python: the interpreter to start (default: this one).
    """

    def __init__(self, *, python: str = sys.executable) -> None:
        self._lock = threading.Lock()
        self._child = PipeChild("ledger.anchor.mining", python=python)

    def mine(self, header: BlockHeader) -> BlockHeader:
        """``header`` with the first nonce from its own that meets its target (as
        ``chain.mine``), searched in the child.

        Raises:
            MiningExhausted: no nonce up to ``2**32-1`` works.
            LimitError: the header's bits are invalid (raised by the in-process fallback).
        """
        with self._lock:
            try:
                nonce = self._ask(header)
            except MiningExhausted:
                raise
            except (OSError, ValueError, EOFError) as exc:
                log.warning("mining child failed (%s); mining this block in-process", exc)
                self._child.stop()
                return mine(header)
        found = dataclasses.replace(header, nonce=nonce)
        if not found.meets_target():  # a child that answers nonsense is not trusted
            log.warning("mining child returned a nonce that misses the target; mining here")
            with self._lock:
                self._child.stop()
            return mine(header)
        return found

    def _ask(self, header: BlockHeader) -> int:
        self._child.send(header.marshal())
        answer = self._child.receive(5)
        if answer[:1] == _EXHAUSTED:
            raise MiningExhausted("no nonce meets the target")
        if answer[:1] != _FOUND:
            raise ValueError("mining child answered an unknown code")
        return int.from_bytes(answer[1:], "little")

    def close(self) -> None:
        """End the child (it exits at end of input); no-op if none runs."""
        with self._lock:
            self._child.stop()


def main() -> None:
    """The child: answer each 80-byte header on standard input until end of input."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            raw = read_exactly(stdin, _HEADER_BYTES)
        except EOFError:
            return  # end of input: the parent closed the pipe or died
        try:
            found = mine(BlockHeader.unmarshal(raw))
        except MiningExhausted:
            answer = _EXHAUSTED + bytes(4)
        else:
            answer = _FOUND + found.nonce.to_bytes(4, "little")
        try:
            stdout.write(answer)
            stdout.flush()
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main()
