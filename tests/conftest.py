"""Suite-wide settings: no telemetry, Prefect's files under a temporary folder."""

from __future__ import annotations

import os
import tempfile

os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["DO_NOT_TRACK"] = "1"
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="notary-prefect-"))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

# Fixtures that start the real bundled stack (used by flow, anchor and reliability tests).
pytest_plugins = ["tests.stack_fixtures"]
