"""The credit gate (``ledger.api.outbox.credit_gate``), driven by a manual clock."""

from __future__ import annotations

import logging

import pytest

from ledger.api.outbox.credit_gate import CreditGate
from ledger.core.clock import ManualClock

ADDRESS = "EC2DKSYyRcNWf7RS963VFYgMExo1824HVeCfQ9PGPmNzwrcmgm2r"


def gate(clock: ManualClock) -> CreditGate:
    return CreditGate(
        ADDRESS, clock=clock, check_interval_s=60.0, retry_base_s=2.0, retry_max_s=10.0
    )


def log_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.name == "ledger.api.outbox.credit_gate"
    ]


def test_funded_gate_looks_the_balance_up_every_interval() -> None:
    clock = ManualClock(1000.0)
    g = gate(clock)
    assert g.funded and g.check_due()  # the first pass looks it up
    assert g.observe(500, needed_ec=1) is True
    assert not g.check_due()
    clock.advance(59.9)
    assert not g.check_due()
    clock.advance(0.1)
    assert g.check_due()
    state = g.snapshot()
    assert (state.ec_address, state.balance_ec, state.checked_at) == (ADDRESS, 500, 1000.0)
    assert state.dry_since is None


def test_refusal_runs_dry_then_lookups_back_off_until_funded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ledger.api.outbox.credit_gate")
    clock = ManualClock(1000.0)
    g = gate(clock)
    g.observe(3, needed_ec=1)
    g.refused(balance_ec=0)
    g.refused(balance_ec=0)  # more refusals of the same batch: nothing new
    assert not g.funded
    assert g.snapshot().dry_since == 1000.0
    due_at = []
    for _ in range(6):  # still under-funded at each look-up: 2, 4, 8, 10, 10, 10 s apart
        while not g.check_due():
            clock.advance(0.5)
        due_at.append(clock.now())
        assert g.observe(0, needed_ec=1) is False
    assert [b - a for a, b in zip([1000.0, *due_at], due_at, strict=False)] == [
        2.0,
        4.0,
        8.0,
        10.0,
        10.0,
        10.0,
    ]
    clock.advance(10)
    assert g.observe(5, needed_ec=11) is False  # does not pay for the oldest held write
    clock.advance(10)
    assert g.observe(11, needed_ec=11) is True
    assert g.snapshot().dry_since is None
    lines = log_lines(caplog)
    assert [level for level, _ in lines] == [logging.WARNING, logging.INFO]
    assert "ran dry (balance 0 credits)" in lines[0][1] and ADDRESS in lines[0][1]
    assert "funded again (balance 11 credits) after 64.0 s dry" in lines[1][1]


def test_a_lookup_that_finds_too_little_runs_dry_without_a_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock(0.0)
    g = gate(clock)
    assert g.observe(0, needed_ec=0) is False  # nothing queued: it must pay for one credit
    assert len(log_lines(caplog)) == 1
    clock.advance(2.0)
    assert g.check_due()
    assert g.observe(1, needed_ec=0) is True


def test_dry_again_after_partial_funding_logs_each_change_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ledger.api.outbox.credit_gate")
    clock = ManualClock(0.0)
    g = gate(clock)
    g.refused(balance_ec=0)
    clock.advance(2.0)
    g.observe(4, needed_ec=1)
    g.refused(balance_ec=0)  # the 4 credits were spent, the queue goes on
    assert not g.funded and g.snapshot().next_check_at == 4.0  # back-off starts again
    assert [level for level, _ in log_lines(caplog)] == [
        logging.WARNING,
        logging.INFO,
        logging.WARNING,
    ]


def test_delays_are_checked() -> None:
    with pytest.raises(ValueError):
        CreditGate(ADDRESS, clock=ManualClock(0), check_interval_s=1, retry_base_s=5, retry_max_s=1)
