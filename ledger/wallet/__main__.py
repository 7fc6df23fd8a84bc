"""``python -m ledger.wallet``: run the wallet service with uvicorn (127.0.0.1:8089 default).

Configuration comes from ``NOTARY_WALLET_*`` environment variables (``WalletSettings``).
"""

from __future__ import annotations

import uvicorn

from ledger.observability.logs import configure_logging
from ledger.wallet.app import create_app
from ledger.wallet.settings import WalletSettings


def main() -> None:
    """Read the settings, build the app and serve it until interrupted; one log line per
    event in ``NOTARY_WALLET_LOG_FORMAT`` (text or json), uvicorn's included."""
    settings = WalletSettings()
    secrets = [s.get_secret_value() for s in (settings.passphrase, settings.restore_mnemonic) if s]
    secrets += [s.get_secret_value() for s in settings.import_secrets]
    configure_logging(settings.log_format, settings.log_level, secrets=secrets)
    app = create_app(settings)
    uvicorn.run(
        app, host=settings.host, port=settings.port, log_level=settings.log_level, log_config=None
    )


if __name__ == "__main__":
    main()
