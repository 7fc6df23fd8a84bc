"""Load golden vectors from ``tests/vectors/`` (copied verbatim from factom-formats.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS_DIR = Path(__file__).resolve().parents[2] / "vectors"


def load(name: str) -> Any:
    """Parsed JSON of ``tests/vectors/<name>``."""
    return json.loads((VECTORS_DIR / name).read_text(encoding="utf-8"))
