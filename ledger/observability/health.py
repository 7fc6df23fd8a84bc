"""Readiness checks: named probes run concurrently, each bounded by a timeout.

A service is **alive** when its process answers (``GET /health/live``: always 200). It is
**ready** when every check of its ``Readiness`` holds (``GET /health/ready``: 200, else
503); the answer lists each check (docs/jsonrpc.md §1, docs/rest-api.md §5)::

    {"status": "ready" | "not_ready", "service": "api",
     "checks": [{"name": "database", "ok": true, "detail": "reachable"},
                {"name": "entry_credits", "ok": false, "detail": "...",
                 "balance_ec": 0, "needed_ec_min": 12, "queued_writes": 12}]}

Figures (counts, ages in seconds) are flat fields of their check. A check never echoes an
exception's message (it may carry a URL, a statement or a value): a check that raises is
reported with the exception's class name only, one that takes longer than the timeout as
timed out. Check helpers for what several services share: ``sqlite_file_check`` (the file
opens read-only and answers a query) and ``jsonrpc_check`` (a JSON-RPC service answers one
method).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcTransportError

__all__ = [
    "Check",
    "CheckResult",
    "Probe",
    "Readiness",
    "ReadinessReport",
    "jsonrpc_check",
    "sqlite_file_check",
]

Figure = int | float | str | bool | None


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: ``ok``, a short human ``detail`` and its ``figures``
    (units in the names: ``_s`` seconds, ``_ec`` entry credits)."""

    ok: bool
    detail: str
    figures: Mapping[str, Figure] = field(default_factory=dict)


Probe = Callable[[], Awaitable[CheckResult]]
"""``await probe()`` -> the check's result (raising counts as not ok)."""


@dataclass(frozen=True)
class Check:
    """A named probe: ``probe()`` returns a ``CheckResult`` (or raises: not ok)."""

    name: str
    probe: Probe


@dataclass(frozen=True)
class ReadinessReport:
    """The checks' results, in the order the checks were added."""

    service: str
    results: tuple[tuple[str, CheckResult], ...]

    @property
    def ready(self) -> bool:
        return all(result.ok for _, result in self.results)

    @property
    def status_code(self) -> int:
        """200 when ready, else 503."""
        return 200 if self.ready else 503

    def to_json(self) -> dict[str, Any]:
        """The answer body of ``GET /health/ready`` (module docstring)."""
        checks = [
            {"name": name, "ok": result.ok, "detail": result.detail, **result.figures}
            for name, result in self.results
        ]
        status = "ready" if self.ready else "not_ready"
        return {"status": status, "service": self.service, "checks": checks}


class Readiness:
    """The readiness checks of one service.

    Args:
        service: the service's name in the report (``"node"``).
        checks: the initial checks (more with ``add``).
        timeout_s: the longest one check may take, seconds.
    """

    def __init__(
        self, service: str, checks: Sequence[Check] = (), *, timeout_s: float = 2.0
    ) -> None:
        self.service = service
        self.timeout_s = timeout_s
        self._checks = list(checks)

    def add(self, check: Check) -> None:
        """Add ``check`` (a name already used raises ``ValueError``)."""
        if any(c.name == check.name for c in self._checks):
            raise ValueError(f"a readiness check named {check.name!r} exists already")
        self._checks.append(check)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self._checks)

    async def report(self) -> ReadinessReport:
        """Run every check at once; each is cut at ``timeout_s``."""
        results = await asyncio.gather(*(self._run(c) for c in self._checks))
        pairs = tuple(zip((c.name for c in self._checks), results, strict=True))
        return ReadinessReport(self.service, pairs)

    async def _run(self, check: Check) -> CheckResult:
        try:
            return await asyncio.wait_for(check.probe(), timeout=self.timeout_s)
        except TimeoutError:
            return CheckResult(False, f"no answer within {self.timeout_s:g} s")
        except Exception as exc:  # a probe's fault is a failed check, never a 500
            return CheckResult(False, f"check failed: {type(exc).__name__}")


def sqlite_file_check(path: Path, *, timeout_s: float = 1.0) -> Probe:
    """A probe: the SQLite file at ``path`` opens read-only and answers a query.

    A fresh connection each time (in a worker thread), so a file that was removed or whose
    folder is gone is seen, although the service's own open connections still work.
    """

    def query() -> CheckResult:
        if not path.is_file():
            return CheckResult(False, f"database file {path.name} is missing")
        uri = f"{path.resolve().as_uri()}?mode=ro"
        try:
            with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=timeout_s)) as conn:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            return CheckResult(False, f"database {path.name} not readable: {type(exc).__name__}")
        return CheckResult(True, f"database {path.name} readable")

    async def probe() -> CheckResult:
        return await asyncio.to_thread(query)

    return probe


def jsonrpc_check(
    client: AsyncJsonRpcClient,
    method: str,
    *,
    what: str,
    figures: Callable[[Any], Mapping[str, Figure]] | None = None,
) -> Probe:
    """A probe: the JSON-RPC service behind ``client`` answers ``method`` (no params).

    Args:
        client: the service's client (its timeout bounds the call too).
        method: a cheap method without params (``heights``, ``properties``).
        what: the service's name in the detail (``"node"``).
        figures: maps the result to figures of the check (for instance the height).

    An error object answered counts as reachable (the service is up and speaking
    JSON-RPC); a transport failure does not.
    """

    async def probe() -> CheckResult:
        try:
            result = await client.call(method)
        except JsonRpcCallError as exc:
            return CheckResult(True, f"{what} answers (error {exc.code} to {method})")
        except JsonRpcTransportError:
            return CheckResult(False, f"{what} unreachable")
        shown = figures(result) if figures is not None else {}
        return CheckResult(True, f"{what} reachable", shown)

    return probe
