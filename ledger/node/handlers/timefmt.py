"""Date fields of ack results: ``*date`` in milliseconds and ``*datestring`` as ``YYYY-MM-DD hh:mm:ss``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def ms_fields(prefix: str, millis: int | None) -> dict[str, Any]:
    """``{prefix}date`` (ms) and ``{prefix}datestring`` (UTC text); zero and "" when unknown."""
    if not millis:
        return {f"{prefix}date": 0, f"{prefix}datestring": ""}
    text = datetime.fromtimestamp(millis / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return {f"{prefix}date": millis, f"{prefix}datestring": text}
