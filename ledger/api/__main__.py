"""``python -m ledger.api``: the publishing API's command line (``ledger.api.command``)."""

import sys

from ledger.api.command import main

if __name__ == "__main__":
    sys.exit(main())
