"""varInt_F (docs/formats.md §0.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import DecodeError
from ledger.core.varint import decode_varint, encode_varint

VECTORS = [
    (0, "00"),
    (127, "7f"),
    (128, "8100"),
    (130, "8102"),
    (65535, "83ff7f"),
    (65536, "848000"),
    (2**32, "9080808000"),
    (2**64 - 1, "81ffffffffffffffff7f"),
]


@pytest.mark.parametrize(("value", "hex_bytes"), VECTORS)
def test_encode_matches_vector(value: int, hex_bytes: str) -> None:
    assert encode_varint(value).hex() == hex_bytes


@pytest.mark.parametrize(("value", "hex_bytes"), VECTORS)
def test_decode_matches_vector(value: int, hex_bytes: str) -> None:
    data = bytes.fromhex(hex_bytes)
    assert decode_varint(data + b"\xff", 0) == (value, len(data))


@pytest.mark.parametrize("value", [-1, 2**64])
def test_encode_rejects_out_of_range(value: int) -> None:
    with pytest.raises(DecodeError):
        encode_varint(value)


@pytest.mark.parametrize("hex_bytes", ["", "80", "ffff", "82" + "80" * 8 + "00", "80" * 10 + "00"])
def test_decode_rejects_truncated_or_oversized(hex_bytes: str) -> None:
    with pytest.raises(DecodeError):
        decode_varint(bytes.fromhex(hex_bytes))


@given(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=4))
def test_round_trip_at_offset(value: int, prefix: bytes) -> None:
    encoded = encode_varint(value)
    assert decode_varint(prefix + encoded, len(prefix)) == (value, len(prefix) + len(encoded))


@pytest.mark.parametrize("encoded", [b"\x80\x00", b"\x80\x01", b"\x80\x80\x7f", b"\x80\x81\x00"])
def test_a_leading_empty_group_is_refused(encoded: bytes) -> None:
    """Only the shortest form decodes, so every value has one encoding (found by the
    decoder fuzzing: an admin block with ``0x80 0x00`` as its expansion size)."""
    with pytest.raises(DecodeError, match="shortest form"):
        decode_varint(encoded)
