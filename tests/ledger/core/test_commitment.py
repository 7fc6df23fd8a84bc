"""Commitments: known answers, recomputed independently, and exact-length checks."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.commitment import (
    collection_identifier,
    document_commitment,
    document_nonce,
)
from ledger.core.errors import DecodeError

KEY = bytes(range(32))
DOC = hashlib.sha256(b"contract.pdf contents").digest()

# Pinned values: a change to the derivation changes every published commitment, so it
# must show up here (and needs a new format version).
NONCE_HEX = "089b09be3be8338c7ec845d44c00650757e681583fa3fe6fdb21d64569e6bce1"
COMMITMENT_HEX = "1f4a600bdf9f9b0e1da11aeabee10ae25d4f6837bbcc7aca9f35dbc31131f627"
COLLECTION_ID_HEX = "2b166b729f3237ae2267930df49f4fa4"


def test_pinned_values() -> None:
    nonce = document_nonce(KEY, DOC)
    assert nonce.hex() == NONCE_HEX
    assert document_commitment(DOC, nonce).hex() == COMMITMENT_HEX
    assert collection_identifier(KEY).hex() == COLLECTION_ID_HEX


def test_derivations_follow_the_documented_formulas() -> None:
    nonce = document_nonce(KEY, DOC)
    assert nonce == hmac.new(KEY, b"notary:nonce:v1" + DOC, hashlib.sha256).digest()
    assert (
        document_commitment(DOC, nonce)
        == hashlib.sha256(b"notary:commitment:v1" + nonce + DOC).digest()
    )
    assert (
        collection_identifier(KEY)
        == hmac.new(KEY, b"notary:collection-id:v1", hashlib.sha256).digest()[:16]
    )


@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32))
def test_commitments_are_deterministic_and_keyed(key: bytes, doc: bytes) -> None:
    nonce = document_nonce(key, doc)
    assert document_nonce(key, doc) == nonce
    other_key = bytes(b ^ 1 for b in key)
    assert document_nonce(other_key, doc) != nonce
    commitment = document_commitment(doc, nonce)
    assert commitment != doc and commitment != nonce
    assert document_commitment(bytes(b ^ 1 for b in doc), nonce) != commitment


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (document_nonce, (KEY[:31], DOC)),
        (document_nonce, (KEY, DOC + b"\x00")),
        (document_nonce, (KEY.hex(), DOC)),
        (document_commitment, (DOC, KEY[:16])),
        (document_commitment, (bytearray(DOC), KEY)),
        (collection_identifier, (KEY * 2,)),
    ],
)
def test_inputs_of_the_wrong_length_or_type_are_refused(call, args) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DecodeError):
        call(*args)
