"""Errors of the anchoring service (``ledger.anchor``).

Exception tree::

    AnchorError (Exception)             root of every error the ``ledger.anchor`` package defines
    ├── AnchorBackendError (RuntimeError)  ``ledger.anchor.backend``: the external chain cannot
    │                                      take or answer for anchors now (``reason``)
    ├── AnchorServiceError (RuntimeError)  ``ledger.anchor.service``: the node answered
    │                                      something the service cannot use
    ├── CalendarError (RuntimeError)       ``ledger.anchor.ots_calendar``: an OpenTimestamps
    │                                      calendar or header source cannot be used now
    ├── MiningExhausted (RuntimeError)     ``ledger.anchor.chain``: no nonce meets the target
    └── NotConfirmed (LookupError)         ``ledger.anchor.backend``: a transaction unknown,
                                           not mined, or not deep enough

Each class is defined beside the code that raises it; the builtin bases stay for the
callers that catch them (``except LookupError``).
"""

from __future__ import annotations

__all__ = ["AnchorError"]


class AnchorError(Exception):
    """Root of the ``ledger.anchor`` package's errors (tree in the module docstring)."""
