"""A real node and a real wallet served by uvicorn on free 127.0.0.1 ports, in threads.

Each server (``tests.harness.servers.AppServer``) runs its own event loop in its own
thread; ``run(coro)`` executes a coroutine on that loop (the node's ``service.tick()``), so
the test drives block production through a shared ``ManualClock`` without touching the
node from a foreign loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.core.clock import ManualClock
from ledger.jsonrpc import JsonRpcCallError, JsonRpcClient
from ledger.node.app import create_app as create_node_app
from ledger.node.settings import NodeSettings
from tests.harness.servers import AppServer

BLOCK_TIME_S = 10.0
NODE_START_S = 1_700_000_000.0


class Rpc:
    """Sync JSON-RPC calls to one server; ``error`` returns the error object of a failing call."""

    def __init__(self, url: str) -> None:
        self.client = JsonRpcClient(f"{url}/v2", timeout_s=10)

    def __call__(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.client.call(method, params)

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            result = self.client.call(method, params)
        except JsonRpcCallError as exc:
            return {"code": exc.code, "message": exc.message, "data": exc.data}
        raise AssertionError(f"{method} answered {result!r}")

    def send(self, request: dict[str, Any]) -> Any:
        """Send a composed request object (``{"jsonrpc","id","params","method"}``) as is."""
        return self.client.call(request["method"], request["params"])


@dataclass
class Node:
    """The bundled node on loopback, its service and the manual clock driving it."""

    served: AppServer
    service: Any
    clock: ManualClock
    rpc: Rpc

    def next_block(self) -> int:
        """Advance the clock through one whole block; returns the new saved height."""
        for _ in range(10):
            self.clock.advance(BLOCK_TIME_S / 10)
            self.served.run(self.service.tick())
        return int(self.rpc("heights")["directoryblockheight"])


@contextmanager
def running_node(data_dir: Path, clock: ManualClock) -> Iterator[Node]:
    """The node app (development genesis, blocks only on ``next_block``) on loopback."""
    settings = NodeSettings(data_dir=data_dir, block_time_s=BLOCK_TIME_S)
    app = create_node_app(settings, clock=clock, produce_blocks=False)
    with AppServer(app) as served:
        rpc = Rpc(served.url)
        try:
            yield Node(served, app.state.node, clock, rpc)
        finally:
            rpc.client.close()
