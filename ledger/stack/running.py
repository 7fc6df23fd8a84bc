"""The stack running: ``StackThread`` (the services in a background thread, for ``notary
demo`` and the tests) and ``wait_until_healthy`` (every service's readiness probe)."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx

from ledger.jsonrpc.credentials import RpcAccess
from ledger.stack.compose import Stack
from ledger.stack.settings import StackSettings

__all__ = ["StackThread", "wait_until_healthy"]


class StackThread:
    """The stack running in a background thread (for ``notary demo`` and tests)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="notary-stack", daemon=True)

    def _main(self) -> None:
        async def run() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await self.stack.serve(self._stop, ready=self._ready)

        try:
            asyncio.run(run())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()

    def start(self, *, timeout_s: float = 60.0) -> None:
        """Start the services and wait until they answer.

        Raises:
            RuntimeError: a service failed to start (the cause is chained).
        """
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise RuntimeError("the stack did not start in time")
        if self._error is not None:
            raise RuntimeError(f"the stack failed to start: {self._error}") from self._error
        wait_until_healthy(self.stack.settings, access=self.stack.node_access())

    def stop(self, *, timeout_s: float = 30.0) -> None:
        """Stop the services and wait for the thread to end."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout_s)


def wait_until_healthy(
    settings: StackSettings, *, timeout_s: float = 30.0, access: RpcAccess | None = None
) -> None:
    """Wait until every service answers ``GET /health/ready`` with 200 (docs/jsonrpc.md
    §1, docs/rest-api.md §5): its database, the services it calls, and for the API its
    entry credits and write backlog. The probes need no credentials; ``access`` gives the
    authority trusted for the services' certificate when they serve HTTPS.

    Raises:
        RuntimeError: a service was still not ready after ``timeout_s`` seconds (the
            message names it and the checks that failed).
    """
    tls = settings.tls_enabled
    urls = {
        "node": settings.url(settings.node_port, "/health/ready", tls=tls),
        "wallet": settings.url(settings.wallet_port, "/health/ready", tls=tls),
        "api": settings.url(settings.api_port, "/health/ready", tls=tls),
        "anchor": settings.url(settings.anchor_port, "/health/ready", tls=tls),
    }
    waiting = dict(urls)
    last: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    verify = (access or RpcAccess()).ssl_verify()
    with httpx.Client(timeout=5.0, verify=verify) as client:
        while waiting and time.monotonic() < deadline:
            for name, url in list(waiting.items()):
                problem = _readiness_problem(client, url)
                if problem is None:
                    del waiting[name]
                else:
                    last[name] = problem
            if waiting:
                time.sleep(0.05)
    if waiting:
        shown = "; ".join(f"{name}: {last.get(name, 'no answer')}" for name in waiting)
        raise RuntimeError(f"services not ready after {timeout_s:g} s: {shown}")


def _readiness_problem(client: httpx.Client, url: str) -> str | None:
    """None when ``url`` answers 200, else what is wrong (failed checks, or no answer)."""
    try:
        response = client.get(url)
    except httpx.HTTPError as exc:
        return f"no answer ({type(exc).__name__})"
    if response.status_code == 200:
        return None
    try:
        checks = response.json()["checks"]
        return ", ".join(f"{c['name']}: {c['detail']}" for c in checks if not c["ok"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"
