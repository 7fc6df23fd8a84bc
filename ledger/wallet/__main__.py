"""``python -m ledger.wallet``: run the wallet service with uvicorn (127.0.0.1:8089 default).

Configuration comes from ``NOTARY_WALLET_*`` environment variables (``WalletSettings``);
HTTPS with ``NOTARY_WALLET_TLS_CERT_FILE`` and ``NOTARY_WALLET_TLS_KEY_FILE``.
"""

from __future__ import annotations

import os

import uvicorn

from ledger.long_lived import freeze_long_lived
from ledger.observability.logs import configure_logging
from ledger.secret_file import OWNER_ONLY_UMASK
from ledger.serving import settings_secrets, uvicorn_options
from ledger.wallet.app import create_app
from ledger.wallet.settings import WalletSettings


def main() -> None:
    """Read the settings, build the app and serve it until interrupted; one log line per
    event in ``NOTARY_WALLET_LOG_FORMAT`` (text or json), uvicorn's included."""
    os.umask(OWNER_ONLY_UMASK)  # its files owner-only (docs/security.md)
    settings = WalletSettings()
    configure_logging(settings.log_format, settings.log_level, secrets=settings_secrets(settings))
    app = create_app(settings)
    freeze_long_lived()
    uvicorn.run(app, **uvicorn_options(settings), log_level=settings.log_level, log_config=None)


if __name__ == "__main__":
    main()
