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
from ledger.serving import uvicorn_options


def main() -> None:
    """Serve until interrupted; one log line per event in ``NOTARY_ANCHOR_LOG_FORMAT``."""
    os.umask(OWNER_ONLY_UMASK)  # its files owner-only (docs/security.md)
    settings = AnchorSettings()
    secrets = [settings.anchor_secret.get_secret_value(), settings.ec_secret.get_secret_value()]
    secrets += [
        s.get_secret_value()
        for s in (
            settings.rpc_password,
            settings.node_rpc_password,
            settings.tls_key_password,
            settings.tsa_basic_auth,
            settings.tsa_bearer_token,
        )
        if s
    ]
    configure_logging(settings.log_format, settings.log_level, secrets=secrets)
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
