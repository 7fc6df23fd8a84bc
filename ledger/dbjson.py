"""JSON text for the databases' JSON columns (the audit store, the publishing API's).

Shared by ``connectors.audit_engine`` and ``ledger.api.db``; like ``ledger.sqlite`` it
imports no service and no pipeline package.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["json_text"]


#: Dates, dataclasses and subclasses of str/int/dict/list go to ``json.dumps`` (refused or
#: written as it writes them), not orjson's own forms.
_ORJSON_OPTIONS = (
    orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


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
