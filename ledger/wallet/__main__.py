"""``python -m ledger.wallet``: run the wallet service with uvicorn (127.0.0.1:8089 default).

Configuration comes from ``NOTARY_WALLET_*`` environment variables (``WalletSettings``);
HTTPS with ``NOTARY_WALLET_TLS_CERT_FILE`` and ``NOTARY_WALLET_TLS_KEY_FILE``.
"""

from __future__ import annotations

import uvicorn

from ledger.serving import uvicorn_options
from ledger.wallet.app import create_app
from ledger.wallet.settings import WalletSettings


def main() -> None:
    """Read the settings, build the app and serve it until interrupted."""
    settings = WalletSettings()
    app = create_app(settings)
    uvicorn.run(app, **uvicorn_options(settings), log_level="info")


if __name__ == "__main__":
    main()
