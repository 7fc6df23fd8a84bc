"""Row hashing: JSON values of every column type, the canonical row (RFC 8785), the key."""

from __future__ import annotations

import enum
import hashlib
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from tasks.row_hashing import UnsupportedValue, canonical_row, hash_row, json_value, key_text


class Color(enum.Enum):
    RED = "red"


def _case_id(value: Any) -> str:
    """A stable id: a memoryview's repr holds its address, which differs per process."""
    return f"memoryview({bytes(value)!r})" if isinstance(value, memoryview) else repr(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (False, False),
        (2**53 - 1, 2**53 - 1),
        (2**53, "9007199254740992"),
        (-(2**63), "-9223372036854775808"),
        (0.1, 0.1),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
        (Decimal("12.30"), "12.3"),
        (Decimal("5.0000000000"), "5"),
        (Decimal("1E+2"), "100"),
        (Decimal("-0.00"), "0"),
        (Decimal("-0.000012"), "-0.000012"),
        (datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05.000000Z"),
        (
            datetime(2024, 1, 2, 3, 4, 5, 7, tzinfo=timezone(timedelta(hours=2))),
            "2024-01-02T01:04:05.000007Z",
        ),
        (date(2024, 1, 2), "2024-01-02"),
        (time(3, 4, 5), "03:04:05.000000"),
        (time(1, 0, tzinfo=timezone(timedelta(hours=2))), "23:00:00.000000Z"),
        (timedelta(days=1, seconds=2, microseconds=3), "P1DT2.000003S"),
        (timedelta(seconds=-1), "-P0DT1.000000S"),
        (b"\x00\xffhi", "AP9oaQ=="),
        (memoryview(b"ab"), "YWI="),
        (uuid.UUID(int=255), "00000000-0000-0000-0000-0000000000ff"),
        (Color.RED, "red"),
        ({"b": [1, Decimal("2.0")], "a": None}, {"b": [1, "2"], "a": None}),
        ((1, "x"), [1, "x"]),
    ],
    ids=_case_id,
)
def test_json_value_conversions(value: Any, expected: Any) -> None:
    assert json_value(value) == expected


def test_canonical_row_is_rfc8785_and_ignores_column_order() -> None:
    row = {"z": "é", "a": Decimal("1.50"), "m": datetime(2024, 1, 1, tzinfo=UTC), "n": None}
    expected = '{"a":"1.5","m":"2024-01-01T00:00:00.000000Z","n":null,"z":"é"}'.encode()
    assert canonical_row(row) == expected
    assert canonical_row(dict(reversed(row.items()))) == expected
    doc = hash_row({"id": 42}, row)
    assert doc.path == "id=42"
    assert doc.sha256 == hashlib.sha256(expected).hexdigest() and doc.size_bytes == len(expected)
    assert key_text({"code": "A-1"}) == 'code="A-1"'


def test_unsupported_value_names_the_column() -> None:
    with pytest.raises(UnsupportedValue, match="'blob'") as caught:
        canonical_row({"id": 1, "blob": object()})
    assert caught.value.column == "blob" and caught.value.type_name == "object"
    with pytest.raises(ValueError, match="at least one column"):
        key_text({})
