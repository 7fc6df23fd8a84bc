"""The strict hex helper: what it accepts, what it refuses and how it says so."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import DecodeError
from ledger.core.hexbytes import (
    from_hex,
    from_hex_list,
    hash32_from_hex,
    hex_or_none,
    is_hash_hex,
    to_hex,
)

HASH = "ab" * 32


@given(st.binary(max_size=300))
def test_round_trip(data: bytes) -> None:
    assert from_hex(to_hex(data), "x") == data
    assert from_hex(to_hex(data).upper(), "x") == data
    assert to_hex(bytearray(data)) == data.hex()


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        (None, {}, "field must be a hex string"),
        (b"abcd", {}, "field must be a hex string"),
        (12, {}, "field must be a hex string"),
        ("abc", {}, "field is not valid hex"),
        ("zz", {}, "field is not valid hex"),
        ("ab cd", {}, "field is not valid hex"),
        (" abcd", {}, "field is not valid hex"),
        ("abcd\n", {}, "field is not valid hex"),
        ("ab\tcd", {}, "field is not valid hex"),
        ("0xabcd", {}, "field is not valid hex"),
        ("+abc", {}, "field is not valid hex"),
        ("\u0661\u0662", {}, "field is not valid hex"),  # Arabic-Indic digits
        ("ａｂ", {}, "field is not valid hex"),  # full-width letters
        ("0x", {"allow_0x": False}, "field is not valid hex"),
        ("0xzz", {"allow_0x": True}, "field is not valid hex"),
        ("0x0xab", {"allow_0x": True}, "field is not valid hex"),
        ("ab" * 31, {"size": 32}, "field must be 32 bytes (64 hex characters)"),
        ("ab" * 33, {"size": 32}, "field must be 32 bytes (64 hex characters)"),
        ("", {"size": 32}, "field must be 32 bytes (64 hex characters)"),
        ("ABCD", {"lowercase": True}, "field must be lowercase hex"),
        ("abcD", {"lowercase": True}, "field must be lowercase hex"),
    ],
)
def test_refusals_name_the_field_and_the_rule(text: object, options: dict, message: str) -> None:
    with pytest.raises(DecodeError) as caught:
        from_hex(text, "field", **options)
    assert str(caught.value) == message
    plain = {key: value for key, value in options.items() if key != "allow_0x"}
    assert hex_or_none(text, **plain) is None


@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        ("", {}, b""),
        ("00ff", {}, b"\x00\xff"),
        ("00FF", {}, b"\x00\xff"),
        ("0x00ff", {"allow_0x": True}, b"\x00\xff"),
        ("0X00ff", {"allow_0x": True}, b"\x00\xff"),
        ("00ff", {"allow_0x": True}, b"\x00\xff"),
        ("0x", {"allow_0x": True}, b""),
        (HASH, {"size": 32}, bytes.fromhex(HASH)),
        ("abcd", {"lowercase": True}, b"\xab\xcd"),
        ("0123", {"lowercase": True}, b"\x01\x23"),
    ],
)
def test_accepted_inputs(text: str, options: dict, expected: bytes) -> None:
    assert from_hex(text, "field", **options) == expected


def test_hash32_and_the_none_form() -> None:
    assert hash32_from_hex(HASH.upper(), "hash") == bytes.fromhex(HASH)
    with pytest.raises(DecodeError, match="hash must be 32 bytes"):
        hash32_from_hex("ab", "hash")
    assert hex_or_none(HASH, size=32) == bytes.fromhex(HASH)
    assert hex_or_none(HASH.upper(), size=32, lowercase=True) is None
    assert hex_or_none(HASH + " ", size=32) is None
    assert hex_or_none(None) is None


def test_lists_name_each_item() -> None:
    assert from_hex_list(["00", "ff"], "extids") == (b"\x00", b"\xff")
    assert from_hex_list(("0x00",), "path", allow_0x=True) == (b"\x00",)
    assert from_hex_list([], "extids") == ()
    with pytest.raises(DecodeError, match=r"^extids\[1\] is not valid hex$"):
        from_hex_list(["00", "f"], "extids")
    with pytest.raises(DecodeError, match="^extids must be a list of hex strings$"):
        from_hex_list("00", "extids")
    with pytest.raises(DecodeError, match=r"^path\[0\] must be 1 bytes"):
        from_hex_list(["0000"], "path", size=1)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "zz" * 32,
        "ab" * 31,
        "ab" * 33,
        "ab" * 31 + "  ",
        " " + "ab" * 31 + " ",
        "ab" * 16 + " " + "ab" * 15 + " ",
        "0x" + "ab" * 31,
        "ａ" * 64,
        "",
    ],
)
def test_the_hash_path_refuses_like_the_general_one(text: object) -> None:
    with pytest.raises(DecodeError) as general:
        from_hex(text, "keymr", size=32)
    with pytest.raises(DecodeError) as fast:
        hash32_from_hex(text, "keymr")
    assert str(fast.value) == str(general.value)


@given(st.binary(min_size=32, max_size=32))
def test_the_hash_path_accepts_like_the_general_one(data: bytes) -> None:
    for text in (data.hex(), data.hex().upper()):
        assert hash32_from_hex(text, "h") == from_hex(text, "h", size=32) == data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ab" * 32, True),
        ("AB" * 32, True),
        ("ab" * 31, False),
        ("ab" * 32 + "\n", False),
        (" " + "ab" * 31 + "a", False),
        ("0x" + "ab" * 31, False),
        ("zz" * 32, False),
        ("٠" * 64, False),
        (b"ab" * 32, False),
        (None, False),
    ],
)
def test_is_hash_hex_is_the_strict_64_digit_rule(text: object, expected: bool) -> None:
    assert is_hash_hex(text) is expected
