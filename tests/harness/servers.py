"""Servers that tests run in a thread of their own, on a loopback port.

``AppServer`` serves an ASGI app (one of the bundled services, or a test's own) on uvicorn;
``HttpServer`` serves an ``http.server`` request handler (a fake peer whose every byte the
test controls). Both listen before ``start`` returns, stop on ``stop``, and are context
managers. A stopped server is not started again: build a new one on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Coroutine
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self

import uvicorn
from starlette.types import ASGIApp

from tests.harness.waiting import wait_until

__all__ = ["AppServer", "HttpServer"]

_START_TIMEOUT_S = 30.0


class _Served:
    """What both servers share: the port, the URL and use as a context manager."""

    port: int

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class AppServer(_Served):
    """An ASGI app on uvicorn, on ``127.0.0.1:port``, with an event loop in its own thread.

    ``stop()`` runs the app's shutdown (lifespan exit) as a SIGTERM would. ``run(coro)``
    executes a coroutine on the server's loop (to drive an app's service from the test
    without touching it from a foreign loop).

    Args:
        app: the ASGI app.
        port: the port to listen on; 0 for any free one (see ``port`` once built).
        name: the thread's name, for debugging.
        lifespan: uvicorn's lifespan mode (``"off"`` for an app whose lifespan a test
            client already runs).
    """

    def __init__(
        self,
        app: ASGIApp,
        port: int = 0,
        *,
        name: str = "app",
        lifespan: Literal["on", "off", "auto"] = "on",
    ) -> None:
        self._socket = _listening_socket(port)
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", lifespan=lifespan)
        self._server = uvicorn.Server(config)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=f"server-{name}", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        # uvicorn exits when the app's startup fails; ``start`` reports that, not the thread.
        with contextlib.suppress(SystemExit):
            self.loop.run_until_complete(self._server.serve(sockets=[self._socket]))

    def start(self) -> None:
        """Start serving and wait until the server is up.

        Raises:
            RuntimeError: its thread ended (the app failed to start).
            WaitTimeout: it did not start within 30 s.
        """
        self._thread.start()

        def started() -> bool:
            if not self._thread.is_alive():
                raise RuntimeError(f"the server on port {self.port} did not start")
            return bool(self._server.started)

        try:
            wait_until(started, _START_TIMEOUT_S, 0.005, what=f"the server on port {self.port}")
        except BaseException:
            self.stop()
            raise

    def stop(self, *, timeout_s: float = 30.0) -> None:
        """Shut the app down (lifespan exit) and wait for the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        if not self._thread.is_alive():
            self.loop.close()
        self._socket.close()

    @property
    def serving(self) -> bool:
        """Whether the server has started and not been told to stop."""
        return bool(self._server.started) and not self._server.should_exit

    def run(self, coro: Coroutine[Any, Any, Any], *, timeout_s: float = 30.0) -> Any:
        """Run ``coro`` on the server's loop; its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=timeout_s)


class HttpServer(_Served):
    """An ``http.server`` request handler served on ``127.0.0.1:port`` by a thread.

    Args:
        handler: the request handler class (one instance per request).
        port: the port to listen on; 0 for any free one (see ``port`` once built).
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> None:
        """Start answering (the socket listens from construction on)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop answering and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def _listening_socket(port: int) -> socket.socket:
    """A socket bound to ``127.0.0.1:port`` for uvicorn to listen on."""
    sock = socket.socket()
    # A restarted server takes the port of the one it replaces at once.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit this; without it every reply waits ~40 ms for a delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    return sock
