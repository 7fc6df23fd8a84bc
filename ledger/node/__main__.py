"""``python -m ledger.node``: run the node with settings from the environment (``NOTARY_NODE_*``)."""

from __future__ import annotations

import sys

import uvicorn

from ledger.node.app import create_app
from ledger.node.settings import NodeSettings


def main() -> None:
    """Serve the node until SIGINT/SIGTERM; uvicorn picks uvloop and httptools when present."""
    settings = NodeSettings()
    sys.setswitchinterval(settings.gil_switch_interval_s)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")


if __name__ == "__main__":
    main()
