"""An entry credit address that runs dry: writes are held, then resume by themselves.

The twin ledger charges what the node charges and refuses an under-funded commit with the
node's words; the worker passes are run by hand under a manual clock.
"""

from __future__ import annotations

import logging

import pytest

from ledger.api.outbox.credit_status import CreditStatus

from .conftest import Api, ApiFactory
from .test_worker import make_chain_with_entries, rows

CHAIN_COST = 11  # a first entry below 1 KiB, plus the 10 credits of a new chain


@pytest.fixture
def dry(make_api: ApiFactory) -> Api:
    api = make_api(credit_retry_base_s=2, credit_retry_max_s=8, credit_check_interval_s=60)
    api.ledger.credits = CHAIN_COST + 2
    return api


def status(api: Api) -> CreditStatus:
    return api.services.credit_status()


def test_writes_beyond_the_balance_are_held_at_multi_az_without_using_attempts(
    dry: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ledger.api.outbox.credit_gate")
    chain_id, hashes = make_chain_with_entries(dry, 6)
    report = dry.run_worker()
    assert (report.committed, report.revealed) == (3, 3)  # the chain and two entries
    held = hashes[3:]
    stored = rows(dry)
    assert {(stored[h].stage, stored[h].state, stored[h].attempts) for h in held} == {
        ("multi_az", "pending", 0)
    }
    for entry_hash in held:  # the read says so too: still multi_az, no failure
        body = dry.get(f"/v1/chains/{chain_id}/entries/{entry_hash}").json()
        assert body["stage"] == "multi_az" and "failure" not in body
    now = status(dry)
    assert (now.funded, now.balance_ec, now.queued_writes, now.dry_since) == (
        False,
        0,
        4,
        dry.clock.now(),
    )

    # more writes while dry: accepted, held, and no commit is even tried
    more = [dry.post_entry(chain_id, [b"dry", bytes([i])]) for i in range(3)]
    assert {r.status_code for r in more} == {202}
    commits = dry.ledger.calls["commit-entry"]
    for _ in range(5):
        dry.clock.advance(0.5)
        dry.run_worker()
    assert dry.ledger.calls["commit-entry"] == commits
    assert dry.ledger.calls["entry-credit-balance"] == 2  # at start, then 2 s after running dry
    assert status(dry).queued_writes == 7

    dry.ledger.credits += 100  # the address is funded
    dry.clock.advance(4)  # the next look-up (back-off: 2 s, then 4 s)
    report = dry.run_worker()
    assert report.committed == 7 and report.revealed == 7
    dry.ledger.mine_block()
    dry.run_worker()
    all_hashes = hashes + [r.json()["entry_hash"] for r in more]
    stored = rows(dry)
    assert {stored[h].stage for h in all_hashes} == {"ledger"}
    assert {stored[h].attempts for h in all_hashes} == {0}
    assert all(dry.ledger.reveals_sent[h] == 1 for h in all_hashes)
    assert all(dry.ledger.commits_sent[h] <= 2 for h in all_hashes)  # refused once at most
    assert status(dry).funded and status(dry).queued_writes == 0
    messages = [r.getMessage() for r in caplog.records if r.name == "ledger.api.outbox.credit_gate"]
    assert len(messages) == 2
    assert "ran dry" in messages[0] and "funded again (balance 100 credits)" in messages[1]


def test_reveals_of_paid_writes_still_go_while_dry(dry: Api) -> None:
    chain_id, hashes = make_chain_with_entries(dry, 1)
    dry.ledger.fail_next("reveal-chain")  # committed, reveal not sent yet (outage)
    dry.run_worker()
    assert rows(dry)[hashes[0]].state == "committed"
    dry.ledger.credits = 0
    dry.post_entry(chain_id, [b"x" * 2000])  # 2 credits: held
    dry.run_worker()
    assert not status(dry).funded
    dry.run_worker()
    assert rows(dry)[hashes[0]].state == "revealed"


def test_an_empty_address_holds_writes_from_the_first_look_up(make_api: ApiFactory) -> None:
    api = make_api()
    api.ledger.credits = 0
    api.run_worker()  # the first pass looks the balance up: nothing pays
    assert not status(api).funded
    make_chain_with_entries(api, 1)
    api.run_worker()
    assert api.ledger.calls["commit-chain"] == 0  # held without being refused


def test_status_reports_the_oldest_write_not_in_a_block(dry: Api) -> None:
    assert status(dry).oldest_unblocked_age_s is None
    accepted_at = dry.clock.now()
    make_chain_with_entries(dry, 4)
    dry.clock.advance(30)
    dry.run_worker()
    now = status(dry)
    assert now.oldest_unblocked_age_s == 30.0
    assert now.ec_address == dry.services.settings.ec_address
    assert now.checked_at == accepted_at + 30
    dry.clock.advance(5)
    assert status(dry).dry_for_s == 5.0
    dry.ledger.mine_block()
    dry.run_worker()  # the chain and two entries in the block; two entries held
    assert status(dry).oldest_unblocked_age_s == 35.0  # the held ones were accepted then too


def test_a_balance_that_cannot_be_looked_up_does_not_hold_writes(make_api: ApiFactory) -> None:
    api = make_api(credit_retry_base_s=2, credit_retry_max_s=8)
    api.ledger.fail_next("entry-credit-balance", times=2)
    _, hashes = make_chain_with_entries(api, 2)
    report = api.run_worker()
    assert report.revealed == 3 and any(e.startswith("credits:") for e in report.errors)
    assert status(api).funded and status(api).balance_ec is None
    api.run_worker()
    assert api.ledger.calls["entry-credit-balance"] == 0  # the next look-up after 2 s
    api.clock.advance(2)
    api.run_worker()  # fails again: 4 s later next
    api.clock.advance(4)
    api.run_worker()
    assert status(api).balance_ec == 10**9
    assert {rows(api)[h].stage for h in hashes} == {"multi_az"}
