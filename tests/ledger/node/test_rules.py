"""Ledger rules of docs/formats.md §1.4, §2.4 and §4.3, on ``LedgerRules`` alone (no I/O).

Every rule has a positive and a negative case; refused messages must leave the state as
it was, and ``undo`` must revert an accepted one.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable

import pytest

from ledger.core.addresses import rcd_hash
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.core.transaction import Transaction, TxAddress
from ledger.node.errors import (
    DuplicateCommit,
    DuplicateTransaction,
    HeldRevealLimit,
    RuleViolation,
)
from ledger.node.process_list import ProcessList
from ledger.node.rules import LedgerRules

NOW_MS = 1_700_000_000_000
WINDOW_MS = 3_600_000
RATE = 1000
EC_KEY = SigningKey.from_seed(bytes(32))
FCT_KEY = SigningKey.from_seed(bytes([7]) * 32)
FCT_RCD = rcd_hash(FCT_KEY.public_key)
OTHER_RCD = rcd_hash(SigningKey.from_seed(bytes([8]) * 32).public_key)


def make_rules(
    *,
    credits: int = 1000,
    coins: int = 10**9,
    saved_chains: set[bytes] | None = None,
    known_commit: Callable[[bytes], bool] | None = None,
    known_transaction: Callable[[bytes], bool] | None = None,
    max_held: int = 10_000,
    max_held_bytes: int = 32 * 1024 * 1024,
) -> LedgerRules:
    chains = saved_chains if saved_chains is not None else set()
    rules = LedgerRules(
        ec_rate=RATE,
        commit_window_ms=WINDOW_MS,
        known_chain=chains.__contains__,
        process_list=ProcessList(height=1, start_s=NOW_MS / 1000),
        known_commit=known_commit or (lambda _t: False),
        known_transaction=known_transaction or (lambda _t: False),
        max_held=max_held,
        max_held_bytes=max_held_bytes,
    )
    rules.ec_balances[EC_KEY.public_key] = credits
    rules.fct_balances[FCT_RCD] = coins
    return rules


def snapshot(rules: LedgerRules) -> tuple[object, ...]:
    pl = rules.pl
    return (
        rules.held_bytes,
        dict(rules.ec_balances),
        dict(rules.fct_balances),
        {k: v.txid for k, v in rules.open_commits.items()},
        set(rules.held),
        list(pl.ec_objects),
        {k: list(v) for k, v in pl.eblock_items.items()},
        set(pl.entries),
        dict(pl.new_chains),
        [list(b) for b in pl.transactions],
        set(pl.commit_txids),
        set(pl.tx_index),
    )


def entry_commit(entry: Entry, *, ts: int = NOW_MS, credits: int | None = None) -> CommitEntry:
    return CommitEntry.create(EC_KEY, entry, timestamp_ms=ts, credits=credits)


def chain_commit(first: Entry, *, ts: int = NOW_MS, credits: int | None = None) -> CommitChain:
    return CommitChain.create(EC_KEY, first, timestamp_ms=ts, credits=credits)


def pay(amount: int, *, fee: int | None = None, ts: int = NOW_MS, ec: bool = False) -> Transaction:
    """FCT_KEY pays ``amount`` to OTHER_RCD (or buys EC for EC_KEY) plus ``fee``."""
    out = TxAddress(amount, EC_KEY.public_key if ec else OTHER_RCD)
    outputs, ec_outputs = ((), (out,)) if ec else ((out,), ())
    draft = Transaction(ts, (TxAddress(amount, FCT_RCD),), outputs, ec_outputs)
    needed = draft.fee(RATE) if fee is None else fee
    return Transaction(ts, (TxAddress(amount + needed, FCT_RCD),), outputs, ec_outputs).sign(
        [FCT_KEY]
    )


def refused(rules: LedgerRules, error: type[Exception], action: Callable[[], object]) -> None:
    before = snapshot(rules)
    with pytest.raises(error):
        action()
    assert snapshot(rules) == before


CHAIN = Entry.first_entry([b"rules", b"chain"], b"first")


def with_chain(rules: LedgerRules) -> None:
    rules.accept_commit(chain_commit(CHAIN), now_ms=NOW_MS)
    rules.accept_reveal(CHAIN.marshal(), now_ms=NOW_MS)
    assert CHAIN.chain_id in rules.pl.new_chains


# -- commits (2.4) ---------------------------------------------------------------------------


def test_commit_deducts_credits_and_opens() -> None:
    rules = make_rules(credits=5)
    entry = Entry(CHAIN.chain_id, (), b"x")
    commit = entry_commit(entry, credits=3)
    accepted = rules.accept_commit(commit, now_ms=NOW_MS)
    assert rules.ec_balances[EC_KEY.public_key] == 2
    assert rules.open_commits[entry.hash()].txid == commit.txid()
    assert rules.pl.commits() == [commit]
    sql, row = accepted.journal
    assert "journal" in sql and row[1:4] == (1, commit.txid(), commit.marshal())


def test_commit_with_bad_signature_is_refused() -> None:
    rules = make_rules()
    commit = entry_commit(Entry(CHAIN.chain_id, (), b"x"))
    forged = dataclasses.replace(commit, credits=2)  # signature no longer covers the bytes
    refused(rules, RuleViolation, lambda: rules.accept_commit(forged, now_ms=NOW_MS))


@pytest.mark.parametrize("offset_ms", [-WINDOW_MS, 0, WINDOW_MS])
def test_commit_inside_the_time_window_is_accepted(offset_ms: int) -> None:
    rules = make_rules()
    commit = entry_commit(Entry(CHAIN.chain_id, (), b"x"), ts=NOW_MS + offset_ms)
    rules.accept_commit(commit, now_ms=NOW_MS)
    assert commit.entry_hash in rules.open_commits


@pytest.mark.parametrize("offset_ms", [-WINDOW_MS - 1, WINDOW_MS + 1])
def test_commit_outside_the_time_window_is_refused(offset_ms: int) -> None:
    rules = make_rules()
    commit = entry_commit(Entry(CHAIN.chain_id, (), b"x"), ts=NOW_MS + offset_ms)
    refused(rules, RuleViolation, lambda: rules.accept_commit(commit, now_ms=NOW_MS))


def test_commit_beyond_the_balance_is_refused() -> None:
    rules = make_rules(credits=2)
    commit = entry_commit(Entry(CHAIN.chain_id, (), b"x"), credits=3)
    refused(rules, RuleViolation, lambda: rules.accept_commit(commit, now_ms=NOW_MS))


@pytest.mark.parametrize("second_credits", [1, 2])
def test_repeated_commit_with_equal_or_lower_payment_is_refused(second_credits: int) -> None:
    rules = make_rules()
    entry = Entry(CHAIN.chain_id, (), b"x")
    rules.accept_commit(entry_commit(entry, credits=2), now_ms=NOW_MS)
    again = entry_commit(entry, ts=NOW_MS + 1, credits=second_credits)
    with pytest.raises(DuplicateCommit) as info:
        before = snapshot(rules)
        rules.accept_commit(again, now_ms=NOW_MS)
    assert info.value.entry_hash == entry.hash()
    assert snapshot(rules) == before


def test_higher_payment_replaces_the_commit_and_both_spend() -> None:
    rules = make_rules(credits=10)
    entry = Entry(CHAIN.chain_id, (), b"x")
    first = entry_commit(entry, credits=1)
    second = entry_commit(entry, ts=NOW_MS + 1, credits=3)
    rules.accept_commit(first, now_ms=NOW_MS)
    rules.accept_commit(second, now_ms=NOW_MS)
    assert rules.open_commits[entry.hash()].txid == second.txid()
    assert rules.ec_balances[EC_KEY.public_key] == 10 - 1 - 3
    assert rules.pl.commits() == [first, second]  # both are recorded in the EC block


def test_the_same_commit_again_is_a_repeated_commit() -> None:
    seen: set[bytes] = set()
    rules = make_rules(known_commit=seen.__contains__)
    with_chain(rules)
    entry = Entry(CHAIN.chain_id, (), b"x")
    commit = entry_commit(entry)
    rules.accept_commit(commit, now_ms=NOW_MS)
    rules.accept_reveal(entry.marshal(), now_ms=NOW_MS)  # consumed: no longer open
    seen.add(commit.txid())
    refused(rules, DuplicateCommit, lambda: rules.accept_commit(commit, now_ms=NOW_MS))


def test_undo_of_a_commit_restores_everything() -> None:
    rules = make_rules()
    with_chain(rules)
    entry = Entry(CHAIN.chain_id, (), b"x")
    rules.accept_reveal(entry.marshal(), now_ms=NOW_MS)  # held
    before = snapshot(rules)
    accepted = rules.accept_commit(entry_commit(entry), now_ms=NOW_MS)
    assert entry.hash() in rules.pl.entries  # the held reveal was released
    accepted.undo()
    assert snapshot(rules) == before


# -- reveals (1.3, 1.4, 2.2) ---------------------------------------------------------------


def test_reveal_before_its_commit_is_held_then_recorded() -> None:
    rules = make_rules()
    with_chain(rules)
    entry = Entry(CHAIN.chain_id, (b"a",), b"late commit")
    _entry, ehash, accepted = rules.accept_reveal(entry.marshal(), now_ms=NOW_MS)
    assert accepted.info["held"] and ehash in rules.held
    rules.accept_commit(entry_commit(entry), now_ms=NOW_MS)
    assert ehash in rules.pl.entries and ehash not in rules.held
    assert ehash not in rules.open_commits


def early(tag: str, size: int = 10) -> Entry:
    """An entry into CHAIN whose commit has not been sent."""
    return Entry(CHAIN.chain_id, (tag.encode(),), b"x" * size)


def test_held_reveals_are_capped_by_count() -> None:
    rules = make_rules(max_held=3)
    with_chain(rules)
    held = [early(str(i)) for i in range(3)]
    for entry in held:
        rules.accept_reveal(entry.marshal(), now_ms=NOW_MS)
    assert len(rules.held) == 3
    refused(
        rules, HeldRevealLimit, lambda: rules.accept_reveal(early("4").marshal(), now_ms=NOW_MS)
    )
    # at the cap: the same reveal again replaces itself, and a paid reveal is not held
    _e, _h, again = rules.accept_reveal(held[1].marshal(), now_ms=NOW_MS + 5)
    assert again.info["held"] and len(rules.held) == 3
    paid = early("paid")
    rules.accept_commit(entry_commit(paid), now_ms=NOW_MS)
    _e, ehash, accepted = rules.accept_reveal(paid.marshal(), now_ms=NOW_MS)
    assert not accepted.info["held"] and ehash in rules.pl.entries
    # a commit releases its held reveal, which makes room
    rules.accept_commit(entry_commit(held[0]), now_ms=NOW_MS)
    _e, _h, fits = rules.accept_reveal(early("4").marshal(), now_ms=NOW_MS)
    assert fits.info["held"] and len(rules.held) == 3


def test_held_reveals_are_capped_by_bytes() -> None:
    one = len(early("a", 1000).marshal())
    rules = make_rules(max_held_bytes=2 * one + len(early("d", 5).marshal()))
    with_chain(rules)
    rules.accept_reveal(early("a", 1000).marshal(), now_ms=NOW_MS)
    rules.accept_reveal(early("b", 1000).marshal(), now_ms=NOW_MS)
    assert rules.held_bytes == 2 * one
    refused(
        rules, HeldRevealLimit, lambda: rules.accept_reveal(early("c", 20).marshal(), now_ms=NOW_MS)
    )
    _e, _h, small = rules.accept_reveal(early("d", 5).marshal(), now_ms=NOW_MS)
    assert small.info["held"]


def test_held_reveals_expire_after_the_commit_window_and_make_room() -> None:
    rules = make_rules(max_held=2)
    with_chain(rules)
    first, second = early("old"), early("younger")
    rules.accept_reveal(first.marshal(), now_ms=NOW_MS)
    rules.accept_reveal(second.marshal(), now_ms=NOW_MS + 1000)
    late = NOW_MS + WINDOW_MS + 1  # the first is now past the window, the second not
    _e, ehash, accepted = rules.accept_reveal(early("new").marshal(), now_ms=late)
    assert accepted.info["held"]
    assert set(rules.held) == {second.hash(), ehash}
    refused(rules, HeldRevealLimit, lambda: rules.accept_reveal(early("x").marshal(), now_ms=late))
    assert rules.expire_held(late + WINDOW_MS + 1, all_of_them=True) == 2 and not rules.held
    assert rules.held_bytes == 0


def test_undo_of_a_held_reveal_gives_its_room_back() -> None:
    rules = make_rules(max_held=1)
    with_chain(rules)
    _e, _h, accepted = rules.accept_reveal(early("a").marshal(), now_ms=NOW_MS)
    accepted.undo()
    assert not rules.held and rules.held_bytes == 0
    rules.accept_reveal(early("b").marshal(), now_ms=NOW_MS)


def test_journal_replay_restores_held_reveals_beyond_a_lowered_cap() -> None:
    rules = make_rules(max_held=1)
    with_chain(rules)
    for seq, tag in ((100, "a"), (101, "b")):
        _e, _h, accepted = rules.accept_reveal(early(tag).marshal(), now_ms=NOW_MS, seq=seq)
        assert accepted.info["held"]
    assert len(rules.held) == 2 and rules.seq == 101


def test_reveal_paid_below_its_size_waits_for_a_larger_commit() -> None:
    rules = make_rules()
    with_chain(rules)
    entry = Entry(CHAIN.chain_id, (), b"x" * 2000)  # KSize 2
    rules.accept_commit(entry_commit(entry, credits=1), now_ms=NOW_MS)
    _e, ehash, accepted = rules.accept_reveal(entry.marshal(), now_ms=NOW_MS)
    assert accepted.info["held"]
    rules.accept_commit(entry_commit(entry, ts=NOW_MS + 1, credits=2), now_ms=NOW_MS)
    assert ehash in rules.pl.entries


def test_reveal_into_a_missing_chain_waits_for_the_chain() -> None:
    rules = make_rules()
    entry = Entry(CHAIN.chain_id, (), b"early")
    rules.accept_commit(entry_commit(entry), now_ms=NOW_MS)
    _e, ehash, accepted = rules.accept_reveal(entry.marshal(), now_ms=NOW_MS)
    assert accepted.info["held"]
    with_chain(rules)  # the chain's creation releases the waiting entry
    assert ehash in rules.pl.entries
    items = rules.pl.eblock_items[CHAIN.chain_id]
    assert items == [CHAIN.hash(), ehash]


def test_chain_reveal_needs_ten_more_credits() -> None:
    rules = make_rules()
    first = Entry.first_entry([b"pricey"], b"x" * 1500)  # KSize 2: needs 12
    rules.accept_commit(chain_commit(first, credits=11), now_ms=NOW_MS)
    _e, ehash, accepted = rules.accept_reveal(first.marshal(), now_ms=NOW_MS)
    assert accepted.info["held"] and first.chain_id not in rules.pl.new_chains
    rules.accept_commit(chain_commit(first, ts=NOW_MS + 1, credits=12), now_ms=NOW_MS)
    assert rules.pl.new_chains[first.chain_id] == ehash


def test_chain_reveal_with_a_wrong_chain_id_hash_is_held() -> None:
    rules = make_rules()
    first = Entry.first_entry([b"one"], b"")
    other = Entry.first_entry([b"two"], b"")
    commit = chain_commit(first)
    bogus = CommitChain.create(EC_KEY, first, timestamp_ms=NOW_MS + 5)
    bogus = dataclasses.replace(bogus, chain_id_hash=CommitChain.chain_id_hash_for(other.chain_id))
    signed = dataclasses.replace(bogus, signature=EC_KEY.sign(bogus.signed_part()))
    rules.accept_commit(signed, now_ms=NOW_MS)
    _e, _h, accepted = rules.accept_reveal(first.marshal(), now_ms=NOW_MS)
    assert accepted.info["held"]
    assert commit.entry_hash == signed.entry_hash


def test_commit_chain_into_an_existing_chain_is_an_ordinary_entry() -> None:
    rules = make_rules(saved_chains={CHAIN.chain_id})
    # the very first entry revealed again, paid by a commit-chain: the chain exists already
    rules.accept_commit(chain_commit(CHAIN), now_ms=NOW_MS)
    _e, ehash, accepted = rules.accept_reveal(CHAIN.marshal(), now_ms=NOW_MS)
    assert not accepted.info["held"]
    assert CHAIN.chain_id not in rules.pl.new_chains
    assert rules.pl.eblock_items[CHAIN.chain_id] == [ehash]


def test_unparsable_reveal_changes_nothing() -> None:
    rules = make_rules()
    before = snapshot(rules)
    with pytest.raises(ValueError):
        rules.accept_reveal(b"\x01" + bytes(40), now_ms=NOW_MS)
    with pytest.raises(ValueError):
        rules.accept_reveal(Entry(CHAIN.chain_id, (), b"").marshal() + b"x" * 10241, now_ms=NOW_MS)
    assert snapshot(rules) == before


def test_reveal_of_a_paid_duplicate_appears_twice() -> None:
    rules = make_rules()
    with_chain(rules)
    entry = Entry(CHAIN.chain_id, (), b"twice")
    for offset in (1, 2):
        rules.accept_commit(entry_commit(entry, ts=NOW_MS + offset), now_ms=NOW_MS)
        rules.accept_reveal(entry.marshal(), now_ms=NOW_MS)
    assert rules.pl.eblock_items[CHAIN.chain_id].count(entry.hash()) == 2


# -- coin transactions (4.3) ---------------------------------------------------------------


def test_transaction_moves_coins() -> None:
    rules = make_rules(coins=10**9)
    tx = pay(10**6)
    rules.accept_transaction(tx, now_ms=NOW_MS)
    fee = tx.fee(RATE)
    assert rules.fct_balances[FCT_RCD] == 10**9 - 10**6 - fee
    assert rules.fct_balances[OTHER_RCD] == 10**6
    assert rules.pl.tx_index[tx.txid()] is tx


def test_entry_credit_purchase_credits_floor_of_amount_over_rate() -> None:
    rules = make_rules(credits=0)
    tx = pay(5 * RATE + 999, ec=True)
    rules.accept_transaction(tx, now_ms=NOW_MS)
    assert rules.ec_balances[EC_KEY.public_key] == 5


def test_underpaid_fee_is_refused_and_exact_fee_accepted() -> None:
    rules = make_rules()
    exact = pay(1000).fee(RATE)
    refused(
        rules,
        RuleViolation,
        lambda: rules.accept_transaction(pay(1000, fee=exact - 1), now_ms=NOW_MS),
    )
    rules.accept_transaction(pay(1000, fee=exact), now_ms=NOW_MS)


def test_double_spend_is_refused() -> None:
    rules = make_rules(coins=100_000)
    first = pay(60_000)
    second = pay(50_000, ts=NOW_MS + 1)  # the same coins, spent again
    rules.accept_transaction(first, now_ms=NOW_MS)
    refused(rules, RuleViolation, lambda: rules.accept_transaction(second, now_ms=NOW_MS))


def test_inputs_are_checked_per_address_not_net() -> None:
    rules = make_rules(coins=0)
    # 5000 in from FCT_RCD and 5000 back out to it: net zero, but the address has nothing
    draft = Transaction(NOW_MS, (TxAddress(20_000 + 5000, FCT_RCD),), (TxAddress(5000, FCT_RCD),))
    tx = draft.sign([FCT_KEY])
    refused(rules, RuleViolation, lambda: rules.accept_transaction(tx, now_ms=NOW_MS))


def test_transaction_without_inputs_is_refused() -> None:
    rules = make_rules()
    tx = Transaction(NOW_MS, (), (TxAddress(1, OTHER_RCD),))
    refused(rules, RuleViolation, lambda: rules.accept_transaction(tx, now_ms=NOW_MS))


def test_transaction_with_a_bad_signature_is_refused() -> None:
    rules = make_rules()
    tx = pay(1000)
    bad = dataclasses.replace(tx, signatures=(bytes(64),))
    refused(rules, RuleViolation, lambda: rules.accept_transaction(bad, now_ms=NOW_MS))


def test_transaction_signed_by_the_wrong_key_is_refused() -> None:
    rules = make_rules()
    tx = pay(1000)
    other = SigningKey.from_seed(bytes([9]) * 32)
    rcd = b"\x01" + other.public_key
    bad = dataclasses.replace(tx, rcds=(rcd,), signatures=(other.sign(tx.ledger_part()),))
    refused(rules, RuleViolation, lambda: rules.accept_transaction(bad, now_ms=NOW_MS))


def test_transaction_outside_the_window_is_refused() -> None:
    rules = make_rules()
    tx = pay(1000, ts=NOW_MS - WINDOW_MS - 1)
    refused(rules, RuleViolation, lambda: rules.accept_transaction(tx, now_ms=NOW_MS))


def test_oversized_transaction_is_refused() -> None:
    rules = make_rules(coins=10**15)
    outputs = tuple(TxAddress(1, hashlib.sha256(bytes([i])).digest()) for i in range(255))
    draft = Transaction(NOW_MS, (TxAddress(10**12, FCT_RCD),), outputs, outputs)
    assert draft.signed_size() > 10240
    tx = draft.sign([FCT_KEY])
    refused(rules, RuleViolation, lambda: rules.accept_transaction(tx, now_ms=NOW_MS))


def test_the_same_transaction_again_is_a_duplicate() -> None:
    seen: set[bytes] = set()
    rules = make_rules(known_transaction=seen.__contains__)
    tx = pay(1000)
    rules.accept_transaction(tx, now_ms=NOW_MS)
    refused(rules, DuplicateTransaction, lambda: rules.accept_transaction(tx, now_ms=NOW_MS))
    seen.add(tx.txid())
    rules.pl = ProcessList(height=2, start_s=NOW_MS / 1000)  # next block: found through the store
    refused(rules, DuplicateTransaction, lambda: rules.accept_transaction(tx, now_ms=NOW_MS))


def test_undo_of_a_transaction_restores_balances() -> None:
    rules = make_rules()
    before = snapshot(rules)
    rules.accept_transaction(pay(1000, ec=True), now_ms=NOW_MS).undo()
    assert snapshot(rules) == before


def test_replay_skips_the_stateless_checks_but_keeps_order() -> None:
    rules = make_rules(credits=0)
    buy = pay(3 * RATE, ec=True, ts=NOW_MS - 10 * WINDOW_MS)  # long out of the window now
    commit = entry_commit(Entry(CHAIN.chain_id, (), b"x"), ts=NOW_MS - 10 * WINDOW_MS)
    rules.accept_transaction(buy, now_ms=NOW_MS, replay=True, seq=5)
    rules.accept_commit(commit, now_ms=NOW_MS, replay=True, seq=6)
    assert rules.ec_balances[EC_KEY.public_key] == 2
    assert rules.seq == 6
