"""The legacy serialization of witness transactions (BIP 144): what a txid hashes.

The witness form is built here by hand from a legacy transaction (marker, flag, one witness
stack per input, BIP 144's layout), so the expected answer is the transaction it was built
from. A real wallet's transactions are checked against their node-reported txids in
``test_bitcoin_rpc.py``.
"""

from __future__ import annotations

import pytest

from ledger.anchor.legacy_tx import legacy_serialization
from ledger.core.errors import DecodeError
from ledger.core.hashing import sha256d
from ledger.core.pow.encoding import encode_compact_size
from ledger.core.pow.tx import PowTransaction, TxIn, TxOut, op_return_script

LEGACY = PowTransaction(
    2,
    (TxIn(bytes(range(32)), 1, b"", 0xFFFFFFFD), TxIn(bytes(32)[:-1] + b"\x07", 0, b"", 5)),
    (TxOut(4_999_999_839, bytes.fromhex("0014") + bytes(20)), TxOut(0, op_return_script(b"Fa"))),
    101,
).marshal()


def witness_form(legacy: bytes, stacks: list[list[bytes]]) -> bytes:
    """BIP 144: version | 00 01 | inputs, outputs | one stack per input | locktime."""
    witness = b"".join(
        encode_compact_size(len(stack)) + b"".join(encode_compact_size(len(i)) + i for i in stack)
        for stack in stacks
    )
    return legacy[:4] + b"\x00\x01" + legacy[4:-4] + witness + legacy[-4:]


STACKS = [[b"\x30" * 71, b"\x02" * 33], []]
WITNESS = witness_form(LEGACY, STACKS)


def test_the_witness_is_dropped_and_the_rest_kept() -> None:
    assert WITNESS != LEGACY
    assert legacy_serialization(WITNESS) == LEGACY
    assert sha256d(legacy_serialization(WITNESS)) == PowTransaction.unmarshal(LEGACY).txid()


def test_a_legacy_transaction_is_kept_as_it_is() -> None:
    assert legacy_serialization(LEGACY) == LEGACY


def test_long_witness_items_use_compact_sizes() -> None:
    stacks = [[b"\x01" * 300], [b"", b"\x02" * 70_000]]
    assert legacy_serialization(witness_form(LEGACY, stacks)) == LEGACY


@pytest.mark.parametrize(
    "mangled",
    [
        WITNESS[:-1],  # cut short
        WITNESS + b"\x00",  # a trailing byte
        WITNESS[:5] + b"\x08" + WITNESS[6:],  # Litecoin's MWEB flag: not a witness
        WITNESS[:6] + b"\x00" + WITNESS[7:],  # no inputs
        witness_form(LEGACY, [[b"\x01"]]),  # one stack for two inputs
    ],
    ids=["cut", "trailing", "mweb-flag", "no-inputs", "missing-stack"],
)
def test_malformed_transactions_are_refused(mangled: bytes) -> None:
    with pytest.raises(DecodeError):
        legacy_serialization(mangled)
