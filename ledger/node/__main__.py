"""``python -m ledger.node``: run the node with settings from the environment (``NOTARY_NODE_*``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from ledger.node.app import serve
from ledger.node.settings import NodeSettings


def main() -> None:
    """Serve the node until SIGINT/SIGTERM, on uvloop when it is installed."""
    settings = NodeSettings()
    sys.setswitchinterval(settings.gil_switch_interval_s)
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(serve(settings))


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


if __name__ == "__main__":
    main()
