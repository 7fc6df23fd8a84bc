"""``python -m ledger.anchor``: run the anchoring service with settings from the environment
(``NOTARY_ANCHOR_*``; HTTPS with ``NOTARY_ANCHOR_TLS_CERT_FILE`` and ``..._TLS_KEY_FILE``),
started as every service is (``ledger.serving.run_service``)."""

from __future__ import annotations

from ledger.anchor.app import create_app
from ledger.anchor.settings import AnchorSettings
from ledger.serving import run_service

if __name__ == "__main__":
    run_service(AnchorSettings, create_app)
