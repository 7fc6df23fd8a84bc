"""Load golden vectors from ``tests/vectors/`` (vectors of docs/formats.md §10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS_DIR = Path(__file__).resolve().parents[2] / "vectors"


def load(name: str) -> Any:
    """Parsed JSON of ``tests/vectors/<name>``."""
    return json.loads((VECTORS_DIR / name).read_text(encoding="utf-8"))
