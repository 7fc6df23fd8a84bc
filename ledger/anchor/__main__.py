"""``python -m ledger.anchor``: run the anchoring service with settings from the environment
(``NOTARY_ANCHOR_*``)."""

from __future__ import annotations

import uvicorn

from ledger.anchor.app import create_app
from ledger.anchor.settings import AnchorSettings
from ledger.observability.logs import configure_logging


def main() -> None:
    """Serve until interrupted; one log line per event in ``NOTARY_ANCHOR_LOG_FORMAT``."""
    settings = AnchorSettings()
    secrets = [settings.anchor_secret.get_secret_value(), settings.ec_secret.get_secret_value()]
    configure_logging(settings.log_format, settings.log_level, secrets=secrets)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,
    )


if __name__ == "__main__":
    main()
