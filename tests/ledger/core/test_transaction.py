"""Coin transactions (docs/formats.md §4): vectors of 4.4, fees, signatures, codec properties."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.addresses import rcd1, rcd_hash, rcd_hash_from_fct_address
from ledger.core.errors import DecodeError, LedgerFormatError, LimitError, SignatureError
from ledger.core.keys import SigningKey
from ledger.core.transaction import Transaction, TxAddress

COINBASE_HEX = "02014f8a7fcd1b000000"
COINBASE_TXID = "e321605afa458333cdded91644b0d9a21b4325bb3340b85a943974bf70aa1e99"

EC_PURCHASE_HEX = (
    "02014f8a851657010001e397a1607d4f56c528ab09da5bbf7b37b0b453f43db303730e28e9ebe02657dff431d4"
    "f7dfaf840017ef7a21d1a616d65e6b73f3c6a7ad5c49340a6c2592872020ec60767ff00d7d01a5be79b6ada79c"
    "0af4d6b7f91234ff321f3b647ed01e02ccbbc0fe9dcc63293482f22455b9756ee4b4db411a5d00e31b689c1bd1"
    "abe1d1e887cf4c52e67fc51fe4d9594c24643a91009c6ea91701b5b6df240248c2f39453162b61d71b982701"
)
EC_PURCHASE_TXID = "f1d9919829fa71ce18caf1bd8659cce8a06c0026d3f3fffc61054ebb25ebeaa0"
EC_PURCHASE_FULL = "c3d09d10693eb867e2bd0a503746df370403c9451ae91a363046f2a68529c2fd"

# docs/formats.md §4.4 (derived): 1 coin from the zero-seed address to sand, ts
# 0x0155ba3b3b3a, R=1000 (the wallet tests build it step by step)
DERIVED_HEX = (
    "020155ba3b3b3a010100afd89f60031cce24bcc43b596af105167de2c03603c20ada3314a7cfb47befcad4883e6f"
    "afd7c200646f3e8750c550e4582eca5047546ffef89c13a175985e320232bacac81cc428013b6a27bcceb6a42d62"
    "a3a8d02a6f0d73653215771de243a63ac048a18b59da29bca4d5e10c6ac61118cd32d0993d7c70408368e5b27782"
    "055b9521798c2bb0b81e10841bf1134e62b5d3e5d70d112da07443cd09f9e36613de8beee954068c0f"
)
DERIVED_TXID = "bfd495740037958f63fb648dc3a60d12f39519aaf5dfa1602ddef392be9d832c"
ZERO_KEY = SigningKey.from_seed(bytes(32))
SAND_FA = "FA2jK2HcLnRdS94dEcU27rF3meoJfpUcZPSinpb7AwQvPRY6RL1Q"


def test_coinbase_vector() -> None:
    tx = Transaction.unmarshal(bytes.fromhex(COINBASE_HEX))
    assert tx == Transaction(1441137675547)
    assert tx.txid().hex() == COINBASE_TXID
    assert tx.full_hash().hex() == COINBASE_TXID
    assert tx.marshal().hex() == COINBASE_HEX
    tx.verify_signatures()  # no inputs, nothing to check


def test_mainnet_ec_purchase_vector() -> None:
    raw = bytes.fromhex(EC_PURCHASE_HEX)
    tx = Transaction.unmarshal(raw)
    assert len(raw) == 179
    assert tx.timestamp_ms == 1441138021975
    assert tx.inputs == (
        TxAddress(
            207999200,
            rcd_hash_from_fct_address("FA2vGRwutdPdTHQa7kkpX3LkSgqKQ1MS2nur4UqbxqP5MGHcziWa"),
        ),
    )
    assert [a.amount for a in tx.ec_outputs] == [200000000]
    assert tx.txid().hex() == EC_PURCHASE_TXID
    assert tx.full_hash().hex() == EC_PURCHASE_FULL
    assert tx.marshal() == raw
    tx.verify_signatures()
    assert tx.fee(666600) == 7999200 == tx.total_inputs() - tx.total_outputs()
    assert tx.ec_outputs[0].amount // 666600 == 300


def test_mainnet_ec_purchase_json_shape() -> None:
    tx = Transaction.unmarshal(bytes.fromhex(EC_PURCHASE_HEX))
    body = tx.to_json(block_height=1)
    assert body["txid"] == EC_PURCHASE_TXID
    assert body["blockheight"] == 1
    assert body["millitimestamp"] == 1441138021975
    assert (
        body["inputs"][0]["useraddress"] == "FA2vGRwutdPdTHQa7kkpX3LkSgqKQ1MS2nur4UqbxqP5MGHcziWa"
    )
    assert body["outecs"] == [
        {
            "amount": 200000000,
            "address": "17ef7a21d1a616d65e6b73f3c6a7ad5c49340a6c2592872020ec60767ff00d7d",
            "useraddress": "EC1whAxbYYsfQoAFLuzHCsz4Qz29WePBcrrGj5MqMQ1PR43wjiBH",
        }
    ]
    assert body["outputs"] == []
    assert body["rcds"] == ["01a5be79b6ada79c0af4d6b7f91234ff321f3b647ed01e02ccbbc0fe9dcc632934"]
    assert body["sigblocks"] == [{"signatures": [tx.signatures[0].hex()]}]


def test_derived_signed_transfer_is_byte_exact() -> None:
    unsigned = Transaction(
        0x0155BA3B3B3A,
        inputs=[TxAddress(100012000, rcd_hash(ZERO_KEY.public_key))],
        outputs=[TxAddress(100000000, rcd_hash_from_fct_address(SAND_FA))],
    )
    assert unsigned.fee(1000) == 12000 == unsigned.total_inputs() - unsigned.total_outputs()
    signed = unsigned.sign([ZERO_KEY])
    assert signed.marshal().hex() == DERIVED_HEX
    assert signed.txid().hex() == DERIVED_TXID == unsigned.txid().hex()
    assert signed.rcds == (rcd1(ZERO_KEY.public_key),)
    signed.verify_signatures()
    assert Transaction.unmarshal(bytes.fromhex(DERIVED_HEX)) == signed


def test_fee_counts_size_outputs_and_signatures() -> None:
    tx = Transaction(1, inputs=[TxAddress(5, bytes(32))] * 2, outputs=[TxAddress(1, bytes(32))] * 3)
    size_units = -(-tx.signed_size() // 1024)
    assert tx.fee(10) == 10 * (size_units + 10 * 3 + 2)


def test_fee_rejects_oversized_transactions() -> None:
    many = [TxAddress(2**64 - 1, bytes(32))] * 255
    tx = Transaction(1, inputs=many, outputs=many)
    with pytest.raises(LimitError):
        tx.fee(1)


def test_unsigned_transaction_cannot_be_marshalled_or_verified() -> None:
    tx = Transaction(1, inputs=[TxAddress(5, rcd_hash(ZERO_KEY.public_key))])
    with pytest.raises(SignatureError):
        tx.marshal()
    with pytest.raises(SignatureError):
        tx.verify_signatures()


def test_sign_needs_a_key_for_every_input() -> None:
    other = SigningKey.from_seed(bytes([1]) * 32)
    tx = Transaction(1, inputs=[TxAddress(5, rcd_hash(ZERO_KEY.public_key))])
    with pytest.raises(SignatureError):
        tx.sign([other])


def test_sign_picks_keys_by_address_in_any_order() -> None:
    other = SigningKey.from_seed(bytes([1]) * 32)
    tx = Transaction(
        1,
        inputs=[
            TxAddress(5, rcd_hash(other.public_key)),
            TxAddress(6, rcd_hash(ZERO_KEY.public_key)),
        ],
    ).sign([ZERO_KEY, other])
    assert tx.rcds == (rcd1(other.public_key), rcd1(ZERO_KEY.public_key))
    tx.verify_signatures()


def test_tampered_signature_fails() -> None:
    tx = Transaction.unmarshal(bytes.fromhex(EC_PURCHASE_HEX))
    sig = bytearray(tx.signatures[0])
    sig[5] ^= 1
    with pytest.raises(SignatureError):
        dataclasses.replace(tx, signatures=(bytes(sig),)).verify_signatures()


def test_tampered_amount_breaks_the_signature() -> None:
    tx = Transaction.unmarshal(bytes.fromhex(EC_PURCHASE_HEX))
    changed = dataclasses.replace(tx, ec_outputs=(TxAddress(200000001, tx.ec_outputs[0].address),))
    with pytest.raises(SignatureError):
        changed.verify_signatures()


def test_rcd_that_does_not_match_the_input_fails() -> None:
    good = Transaction(1, inputs=[TxAddress(5, rcd_hash(ZERO_KEY.public_key))]).sign([ZERO_KEY])
    moved = dataclasses.replace(good, inputs=(TxAddress(5, bytes(32)),))
    with pytest.raises(SignatureError, match="RCD 0"):
        moved.verify_signatures()


@pytest.mark.parametrize(
    "raw",
    [
        "03014f8a7fcd1b000000",  # version 3
        "02014f8a7fcd1b0000",  # truncated counts
        "02014f8a7fcd1b00000000",  # trailing byte
        "02014f8a7fcd1b010000" + "01" + "00" * 32 + "02" + "00" * 96,  # RCD type 2
    ],
)
def test_malformed_transactions_are_rejected(raw: str) -> None:
    with pytest.raises(DecodeError):
        Transaction.unmarshal(bytes.fromhex(raw))


def test_construction_validates_fields() -> None:
    with pytest.raises(LimitError):
        Transaction(2**48)
    with pytest.raises(LimitError):
        TxAddress(-1, bytes(32))
    with pytest.raises(DecodeError):
        TxAddress(1, bytes(31))
    with pytest.raises(DecodeError):
        Transaction(1, inputs=[TxAddress(1, bytes(32))], rcds=[bytes(33)], signatures=[bytes(64)])
    with pytest.raises(DecodeError):
        Transaction(1, inputs=[TxAddress(1, bytes(32))], rcds=[b"\x01" + bytes(32)])


tx_addresses = st.builds(TxAddress, st.integers(0, 2**64 - 1), st.binary(min_size=32, max_size=32))


@st.composite
def transactions(draw: st.DrawFn) -> Transaction:
    inputs = draw(st.lists(tx_addresses, max_size=4))
    rcds = [b"\x01" + draw(st.binary(min_size=32, max_size=32)) for _ in inputs]
    sigs = [draw(st.binary(min_size=64, max_size=64)) for _ in inputs]
    return Transaction(
        draw(st.integers(0, 2**48 - 1)),
        inputs,
        draw(st.lists(tx_addresses, max_size=4)),
        draw(st.lists(tx_addresses, max_size=4)),
        rcds,
        sigs,
    )


@given(transactions())
def test_marshal_round_trip(tx: Transaction) -> None:
    raw = tx.marshal()
    assert Transaction.unmarshal(raw) == tx
    assert len(raw) == tx.signed_size()


@given(transactions(), st.data())
def test_truncations_are_rejected(tx: Transaction, data: st.DataObject) -> None:
    raw = tx.marshal()
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(LedgerFormatError):
        Transaction.unmarshal(raw[:cut])
