"""``python -m ledger.node``: run the node with settings from the environment
(``NOTARY_NODE_*``), started as every service is (``ledger.serving.run_service``), with the
interpreter's thread switch interval and the HTTP keep-alive of its settings."""

from __future__ import annotations

import sys

from ledger.node.app import create_app
from ledger.node.http import NodeAsgiApp
from ledger.node.settings import NodeSettings
from ledger.serving import run_service


def _app(settings: NodeSettings) -> NodeAsgiApp:
    sys.setswitchinterval(settings.gil_switch_interval_s)
    return create_app(settings)


if __name__ == "__main__":
    run_service(NodeSettings, _app, options=lambda s: {"timeout_keep_alive": int(s.keepalive_s)})
