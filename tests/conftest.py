"""Suite-wide settings: no telemetry, Prefect's files under a temporary folder."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["DO_NOT_TRACK"] = "1"
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="notary-prefect-"))
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Each xdist worker runs its own temporary Prefect server: its own home and database.
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="notary-prefect-")
    # xdist starts its workers with COLUMNS=80: rich's consoles would then keep that width
    # for good, and the CLI tests' own COLUMNS (given per invocation) would not reach them.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

# The harness's fixtures: the real bundled stack (flow, anchor and reliability tests), a
# real litecoind in regtest (the Bitcoin RPC anchor tests) and
# the machine's PostgreSQL, whose plugin also registers ``--require-postgres``; pytester
# runs pytest inside a test (the harness's own tests).
pytest_plugins = [
    "pytester",
    "tests.harness.stack",
    "tests.harness.postgres",
    "tests.harness.litecoind",
]


@pytest.fixture(autouse=True)
def _umask_restored() -> Iterator[None]:
    """Put the process's umask back after each test: the ``notary`` command sets an
    owner-only umask for its whole process, and a test that runs it in process must not
    change the modes of files that later tests (on the same worker) create."""
    mask = os.umask(0o022)
    os.umask(mask)
    yield
    os.umask(mask)
