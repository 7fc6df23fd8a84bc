"""``wait_until`` and ``free_port``: the two smallest pieces of the harness."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.harness.ports import free_port
from tests.harness.waiting import WaitTimeout, wait_until


def test_wait_until_returns_the_first_true_value() -> None:
    answers = iter([None, 0, "", 7, 8])
    assert wait_until(lambda: next(answers), 5, 0.001) == 7


def test_wait_until_tries_once_more_after_the_deadline() -> None:
    calls: list[float] = []

    def late() -> bool:
        calls.append(time.monotonic())
        return len(calls) == 2  # true only on the try after the pause

    assert wait_until(late, 0.01, 0.05) is True
    assert calls[1] - calls[0] >= 0.05 > 0.01  # that try came after the deadline


def test_wait_until_times_out_with_what_and_the_last_error() -> None:
    def refused() -> bool:
        raise ConnectionRefusedError("nobody listens")

    with pytest.raises(WaitTimeout) as caught:
        wait_until(refused, 0.05, 0.01, what="the service", ignoring=(ConnectionError,))
    assert isinstance(caught.value, AssertionError)  # a test that waits in vain fails
    assert str(caught.value).startswith("timed out after 0.05 s waiting for the service")
    assert "ConnectionRefusedError: nobody listens" in str(caught.value)
    assert isinstance(caught.value.last_error, ConnectionRefusedError)


def test_wait_until_shows_the_state_reached_and_lets_other_errors_out() -> None:
    state = {"height": 3}
    with pytest.raises(WaitTimeout, match="height 5; at 3"):
        wait_until(lambda: False, 0.01, what=lambda: f"height 5; at {state['height']}")
    empty: dict[str, int] = {}
    with pytest.raises(KeyError):
        wait_until(lambda: empty["x"], 5, ignoring=(ValueError,))


def test_free_ports_are_bindable_below_the_ephemeral_range_and_never_repeat() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(1024 <= port < low for port in ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))
