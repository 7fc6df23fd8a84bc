"""The anchoring service's round loop: a failed round is logged and the next one runs; a
stop ends the wait at once."""

from __future__ import annotations

import asyncio
import logging

import pytest

from ledger.anchor.rounds import run_rounds

pytestmark = pytest.mark.anyio


async def test_a_failed_round_is_logged_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = asyncio.Event()
    calls: list[int] = []

    async def step() -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("node restarting")
        if len(calls) == 3:
            stop.set()

    with caplog.at_level(logging.WARNING, logger="ledger.anchor.rounds"):
        await asyncio.wait_for(run_rounds(step, stop, interval_s=0.01, what="testing"), 5)
    assert calls == [0, 1, 2]
    assert "testing round failed: node restarting" in caplog.text


async def test_a_stop_ends_the_wait_between_rounds() -> None:
    stop = asyncio.Event()
    rounds: list[None] = []

    async def step() -> None:
        rounds.append(None)
        asyncio.get_running_loop().call_later(0.05, stop.set)

    await asyncio.wait_for(run_rounds(step, stop, interval_s=3600, what="testing"), 5)
    assert len(rounds) == 1


def test_a_failed_call_waits_twice_as_long_each_time_up_to_the_cap() -> None:
    from ledger.anchor.rounds import RETRY_BASE_S, RETRY_MAX_S, retry_delay

    assert [retry_delay(n) for n in range(3)] == [RETRY_BASE_S, 2 * RETRY_BASE_S, 4 * RETRY_BASE_S]
    assert retry_delay(30) == RETRY_MAX_S
    assert retry_delay(2, base_s=60.0, cap_s=100.0) == 100.0
