"""JSON text for the databases' JSON columns (the audit store, the publishing API's).

Shared by ``connectors.audit.engine`` and ``ledger.api.db``; like ``ledger.sqlite`` it
imports no service and no pipeline package.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["json_text", "json_value"]


#: Dates, dataclasses and subclasses of str/int/dict/list go to ``json.dumps`` (refused or
#: written as it writes them), not orjson's own forms.
_ORJSON_OPTIONS = (
    orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)

#: An integer part of 20 digits or more: beyond orjson's 64-bit integers (a match inside a
#: string only costs the slower parser).
_BIG_INTEGER = re.compile(r"(?<![\w.])-?\d{20}")


def json_text(value: Any) -> str:
    """The JSON text written in JSON columns (SQLAlchemy's ``json_serializer``): orjson's,
    compact UTF-8.

    ``json.dumps`` (SQLAlchemy's default) took ~10 % of the pipeline's CPU in the entry
    mode at 20,000 files: every receipt the audit store keeps is ~8 KB of JSON (and every
    reveal call the API keeps ~8 KB). The values read back are the same. A value orjson
    refuses (an integer beyond 64 bits) is written by ``json.dumps``; non-string keys
    become strings, as ``json.dumps`` makes them.

    Raises:
        TypeError: a value JSON cannot hold (as ``json.dumps``).
    """
    try:
        return orjson.dumps(value, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value)


def json_value(text: str | bytes) -> Any:
    """The value of JSON ``text`` read from a JSON column (SQLAlchemy's
    ``json_deserializer``): orjson's parser, ``json.loads`` for what orjson refuses
    (``NaN``, lone surrogates) or would read otherwise (orjson makes an integer beyond 64
    bits a float: a run of 20 digits, outside a word, sends the text to ``json.loads``),
    so every text reads as ``json.loads`` reads it.

    The publishing API's worker reads thousands of rows' external IDs (and reveal calls)
    a second; ``json.loads`` took a few per cent of the bundled stack's CPU there.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``, as ``json.loads``).
    """
    if _BIG_INTEGER.search(text if isinstance(text, str) else text.decode()) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)
