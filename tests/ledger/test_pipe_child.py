"""The child process over pipes shared by the miner and the hashing child: started on
demand, replaced when dead, ended with its input; short reads are errors."""

from __future__ import annotations

import io

import pytest

from ledger.pipe_child import PipeChild, read_exactly


def test_a_child_is_started_on_send_and_ends_with_its_input() -> None:
    child = PipeChild("ledger.anchor.mining")
    with pytest.raises(EOFError):
        child.receive(1)  # nothing runs yet
    assert child.process is None
    child.send(b"")  # nothing to do: it waits for its input
    running = child.process
    assert running is not None and running.poll() is None
    child.stop()
    assert child.process is None and running.wait(timeout=5) == 0


def test_a_dead_child_is_replaced_on_the_next_send() -> None:
    child = PipeChild("ledger.anchor.mining")
    try:
        child.send(b"")
        first = child.process
        assert first is not None
        first.kill()
        first.wait()
        with pytest.raises(EOFError):
            child.receive(5)  # its output ended
        child.send(b"")
        assert child.process is not None and child.process.pid != first.pid
    finally:
        child.stop()


def test_read_exactly_refuses_a_short_stream() -> None:
    assert read_exactly(io.BytesIO(b"abcdef"), 4) == b"abcd"
    assert read_exactly(io.BytesIO(b""), 0) == b""
    with pytest.raises(EOFError, match="after 3 of 4 bytes"):
        read_exactly(io.BytesIO(b"abc"), 4)
