"""Pure transaction steps (docs/formats.md §4.3): records, fee safeguard bounds, names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.keys import SigningKey
from ledger.core.transaction import Transaction, TxAddress
from ledger.wallet.errors import FeeError, TransactionError
from ledger.wallet.tx_book import TransactionBook
from ledger.wallet.tx_build import (
    add_fee,
    check_fee,
    check_name,
    fee_paid,
    from_record,
    set_input,
    set_output,
    sub_fee,
    to_record,
    transaction_json,
)

KEY = SigningKey.from_seed(bytes(32))
ADDRESS = bytes(range(32))
OTHER = bytes(32)

addresses = st.builds(TxAddress, st.integers(0, 2**64 - 1), st.binary(min_size=32, max_size=32))


@given(
    st.integers(0, 2**48 - 1),
    st.lists(addresses, max_size=4),
    st.lists(addresses, max_size=4),
    st.lists(addresses, max_size=4),
)
def test_records_round_trip(ts: int, inputs: list, outputs: list, ecs: list) -> None:
    tx = Transaction(ts, tuple(inputs), tuple(outputs), tuple(ecs))
    assert from_record(to_record(tx)) == tx


def test_signed_records_round_trip() -> None:
    from ledger.core.addresses import rcd_hash

    tx = Transaction(5, (TxAddress(10, rcd_hash(KEY.public_key)),)).sign([KEY])
    assert from_record(to_record(tx)) == tx


def test_fee_bounds() -> None:
    base = set_output(set_input(Transaction(0), ADDRESS, 0), OTHER, 100)
    required = base.fee(1000)
    assert required == 12000
    for paid in (required, 10 * required - 1):
        check_fee(set_input(base, ADDRESS, 100 + paid), 1000, name="t")
    for paid in (required - 1, 10 * required, -5):
        with pytest.raises(FeeError) as caught:
            check_fee(set_input(base, ADDRESS, max(0, 100 + paid)), 1000, name="t")
        assert caught.value.required == required
        assert caught.value.paid == max(-100, paid)


def test_add_and_sub_fee_need_a_balanced_transaction() -> None:
    tx = set_output(set_input(Transaction(0), ADDRESS, 10**6), OTHER, 10**6)
    assert fee_paid(add_fee(tx, ADDRESS, 1000, name="t")) == 12000
    assert fee_paid(sub_fee(tx, OTHER, 1000, name="t", ec=False)) == 12000
    with pytest.raises(TransactionError, match="is not an output"):
        sub_fee(tx, OTHER, 1000, name="t", ec=True)
    with pytest.raises(TransactionError, match="don't add up"):
        add_fee(set_input(tx, ADDRESS, 10**6 + 1), ADDRESS, 1000, name="t")


def test_json_of_a_recorded_transaction_has_its_height_and_no_name() -> None:
    body = transaction_json(Transaction(1_000_999), rate=1000, block_height=7)
    assert list(body)[:4] == ["blockheight", "feespaid", "feesrequired", "signed"]
    assert "name" not in body and body["timestamp"] == 1000 and body["signed"] is False


@pytest.mark.parametrize("name", ["", "has space", "semi;colon", "x" * 129, "é"])
def test_bad_names(name: str) -> None:
    with pytest.raises(TransactionError):
        check_name(name)


def test_good_names() -> None:
    assert check_name("Tx_1-a") == "Tx_1-a"
    assert repr(TransactionBook.__new__(TransactionBook)) == "TransactionBook()"
