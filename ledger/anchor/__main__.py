"""``python -m ledger.anchor``: run the anchoring service with settings from the environment
(``NOTARY_ANCHOR_*``; HTTPS with ``NOTARY_ANCHOR_TLS_CERT_FILE`` and ``..._TLS_KEY_FILE``)."""

from __future__ import annotations

import os

import uvicorn

from ledger.anchor.app import create_app
from ledger.anchor.settings import AnchorSettings
from ledger.long_lived import freeze_long_lived
from ledger.observability.logs import configure_logging
from ledger.secret_file import OWNER_ONLY_UMASK
from ledger.serving import settings_secrets, uvicorn_options


def main() -> None:
    """Serve until interrupted; one log line per event in ``NOTARY_ANCHOR_LOG_FORMAT``."""
    os.umask(OWNER_ONLY_UMASK)  # its files owner-only (docs/security.md)
    settings = AnchorSettings()
    configure_logging(settings.log_format, settings.log_level, secrets=settings_secrets(settings))
    app = create_app(settings)
    freeze_long_lived()
    uvicorn.run(
        app,
        **uvicorn_options(settings),
        log_level=settings.log_level,
        log_config=None,
    )


if __name__ == "__main__":
    main()
