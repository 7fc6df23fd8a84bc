"""``python -m ledger.anchor``: run the anchoring service with settings from the environment
(``NOTARY_ANCHOR_*``; HTTPS with ``NOTARY_ANCHOR_TLS_CERT_FILE`` and ``..._TLS_KEY_FILE``)."""

from __future__ import annotations

import uvicorn

from ledger.anchor.app import create_app
from ledger.anchor.settings import AnchorSettings
from ledger.serving import uvicorn_options


def main() -> None:
    """Read the settings, build the app and serve it until interrupted."""
    settings = AnchorSettings()
    uvicorn.run(create_app(settings), **uvicorn_options(settings), log_level="warning")


if __name__ == "__main__":
    main()
