"""``python -m ledger.node``: run the node with settings from the environment (``NOTARY_NODE_*``)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable

from ledger.node.app import serve
from ledger.node.settings import NodeSettings
from ledger.observability.logs import configure_logging
from ledger.secret_file import OWNER_ONLY_UMASK
from ledger.serving import settings_secrets


def main() -> None:
    """Serve the node until SIGINT/SIGTERM, on uvloop when it is installed; one log line
    per event in ``NOTARY_NODE_LOG_FORMAT`` (text or json)."""
    os.umask(OWNER_ONLY_UMASK)  # its files owner-only (docs/security.md)
    settings = NodeSettings()
    configure_logging(settings.log_format, settings.log_level, secrets=settings_secrets(settings))
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
