"""An ASGI app served by uvicorn in a background thread of a pipeline command.

Used by ``notary collect --listen`` (the callback receiver, ``connectors.callback_receiver``)
and by the metrics and health server of ``notary watch`` and ``notary collect --listen``
(``flows.observability``). The command keeps its own signal handling (uvicorn's is turned
off) and its logging set-up (``log_config=None``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Self

from starlette.types import ASGIApp

from connectors.errors import ConnectorPackageError
from ledger.serving import Address, QuietServer, server_config

__all__ = ["ServedApp", "ServerStartError"]


class ServerStartError(ConnectorPackageError, RuntimeError):
    """The server could not listen (address in use or not available)."""


class ServedApp:
    """``app`` served on ``host:port`` by uvicorn in a daemon thread.

    Args:
        app: the ASGI app (its lifespan is not run).
        host, port: where to listen (loopback unless told otherwise).
        name: what the server is, in the thread's name and the start error.
    """

    def __init__(self, app: ASGIApp, *, host: str, port: int, name: str) -> None:
        config = server_config(app, Address(host, port), log_level="warning", lifespan="off")
        self._server = QuietServer(config)
        self._thread = threading.Thread(
            target=self._run, name=f"notary-{name.replace(' ', '-')}", daemon=True
        )
        self.host, self.port, self.name = host, port, name

    def _run(self) -> None:
        # uvicorn exits (SystemExit) when it cannot bind; ``start`` reports that instead.
        with contextlib.suppress(SystemExit):
            self._server.run()

    def start(self, *, timeout_s: float = 10.0) -> None:
        """Start listening; returns once the socket is bound.

        Raises:
            ServerStartError: the server did not start (port in use, bad address).
        """
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop(timeout_s=1.0)
                raise ServerStartError(
                    f"the {self.name} could not listen on {self.host}:{self.port} "
                    "(is the port in use?)"
                )
            time.sleep(0.01)

    def stop(self, *, timeout_s: float = 10.0) -> None:
        """Stop listening and wait for the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
