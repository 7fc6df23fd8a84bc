"""``json_text``: JSON columns read back what ``json.dumps`` would store."""

from __future__ import annotations

import datetime
import enum
import json

import pytest

from ledger.dbjson import json_text, json_value


class _Stage(enum.StrEnum):
    LEDGER = "ledger"


@pytest.mark.parametrize(
    "value",
    [
        {"entry": {"entryhash": "ab" * 32, "timestamp": 1}, "merklebranch": [{"left": "00"}]},
        ["a", 1, 2.5, None, True, False, "é ✓"],
        {1: "int key", "nested": {"x": [1, {"y": None}]}},
        2**70,
        {"stage": _Stage.LEDGER},
    ],
)
def test_reads_back_as_json_dumps_writes(value: object) -> None:
    assert json.loads(json_text(value)) == json.loads(json.dumps(value))


@pytest.mark.parametrize("value", [{"at": datetime.datetime(2026, 1, 1)}, object(), {1, 2}])
def test_refuses_what_json_dumps_refuses(value: object) -> None:
    with pytest.raises(TypeError):
        json_text(value)


@pytest.mark.parametrize(
    "text",
    [
        '{"method": "reveal-entry", "params": {"entry": "00ab"}}',
        '["YQ==", "", "é ✓"]',
        str(2**70),
        f"[-{2**64}, {2**64 - 1}, {2**63}, 1.0]",
        '{"x": NaN, "y": -Infinity}',
        '"\\ud800"',
        "1.5e300",
    ],
)
def test_json_value_reads_as_json_loads(text: str) -> None:
    expected, got = json.loads(text), json_value(text)
    assert repr(got) == repr(expected)  # repr: NaN != NaN, types must match too


def test_json_value_refuses_what_json_loads_refuses() -> None:
    with pytest.raises(ValueError):
        json_value('{"a": ')
