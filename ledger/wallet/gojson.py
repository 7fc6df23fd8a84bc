"""JSON text byte-identical to Go's ``encoding/json.Marshal`` for the values walletd signs.

Identity entries (docs/formats.md §8.1) carry JSON built by Go: compact, map keys sorted,
``<``, ``>``, ``&``, U+2028 and U+2029 escaped as ``\\u003c``-style sequences, non-ASCII
text kept as UTF-8, and every number printed as a float64 the way Go prints it (integers
beyond 2^53 lose precision exactly as in Go). Pure functions, no I/O.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

__all__ = ["go_json_dumps", "go_number"]

_HTML_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def go_json_dumps(value: Any) -> bytes:
    """UTF-8 JSON of ``value`` (dict, list, str, int, float, bool, None) as Go marshals it.

    Raises:
        ValueError: NaN or infinity (Go refuses them too), or an unsupported type.
    """
    return _encode(value).encode("utf-8")


def go_number(number: float | int) -> str:
    """Go's float64 text: shortest digits, plain notation for 1e-6 <= |x| < 1e21, else
    exponent form with at least one exponent digit (``1e-7``, ``1e+21``)."""
    value = float(number)
    if math.isnan(value) or math.isinf(value):
        raise ValueError("JSON cannot hold NaN or infinity")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    text = repr(value)
    if 1e-6 <= abs(value) < 1e21:
        return format(Decimal(text), "f").removesuffix(".0")
    mantissa, _, exponent = text.partition("e")
    sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
    return f"{mantissa.removesuffix('.0')}e{sign}{digits.zfill(2) if sign == '+' else digits}"


def _encode(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return go_number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    if isinstance(value, dict):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ",".join(f"{_string(k)}:{_encode(v)}" for k, v in items) + "}"
    raise ValueError(f"cannot encode {type(value).__name__} as JSON")


def _string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    for char, escape in _HTML_ESCAPES.items():
        encoded = encoded.replace(char, escape)
    return encoded
