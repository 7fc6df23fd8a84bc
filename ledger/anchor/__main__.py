"""``python -m ledger.anchor``: run the anchoring service with settings from the environment
(``NOTARY_ANCHOR_*``)."""

from __future__ import annotations

import uvicorn

from ledger.anchor.app import create_app
from ledger.anchor.settings import AnchorSettings


def main() -> None:
    settings = AnchorSettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")


if __name__ == "__main__":
    main()
