"""``python -m ledger.wallet``: run the wallet service (127.0.0.1:8089 by default).

Configuration comes from ``NOTARY_WALLET_*`` environment variables (``WalletSettings``);
HTTPS with ``NOTARY_WALLET_TLS_CERT_FILE`` and ``NOTARY_WALLET_TLS_KEY_FILE``; started as
every service is (``ledger.serving.run_service``).
"""

from __future__ import annotations

from ledger.serving import run_service
from ledger.wallet.app import create_app
from ledger.wallet.settings import WalletSettings

if __name__ == "__main__":
    run_service(WalletSettings, create_app)
