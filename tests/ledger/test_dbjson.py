"""``json_text``: JSON columns read back what ``json.dumps`` would store."""

from __future__ import annotations

import datetime
import enum
import json

import pytest

from ledger.dbjson import json_text


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
