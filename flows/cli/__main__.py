"""``python -m flows.cli``: the ``notary`` command line."""

from __future__ import annotations

from flows.cli.application import main

main()
