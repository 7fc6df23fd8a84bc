"""``python -m ledger.wallet``: run the wallet service with uvicorn (127.0.0.1:8089 default).

Configuration comes from ``NOTARY_WALLET_*`` environment variables (``WalletSettings``).
"""

from __future__ import annotations

import uvicorn

from ledger.wallet.app import create_app
from ledger.wallet.settings import WalletSettings


def main() -> None:
    """Read the settings, build the app and serve it until interrupted."""
    settings = WalletSettings()
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="info")


if __name__ == "__main__":
    main()
