"""Harmony Connect compatibility: the hosted service's shapes for its SDKs.

The official Harmony Connect SDKs (``factom-harmony-connect`` on PyPI, and the JavaScript,
Java, C# and Go ones) were written against the hosted service, whose answers wrap
resources in ``{"data": ...}``, page lists as ``{"data", "offset", "limit", "count"}``,
answer searches with lists, name the stages ``replicated``/``factom``/``anchored`` and
offer identities, receipts and anchors. The spec (``publishing-rest-api.md``) shows plain
shapes instead. Both are served, on the same paths, chosen per request
(``ledger.api.connect.dispatch``):

* ``user-key`` header (the spec's): the spec's shapes, exactly;
* ``app_id`` + ``app_key`` headers and no ``user-key`` (what the SDKs send): the hosted
  service's shapes (``ledger.api.connect.shapes``), plus the routes the SDKs use beyond
  the spec: ``/v1/identities`` (``ledger.api.connect.identities``), ``/v1/receipts`` and
  ``/v1/anchors`` (``ledger.api.connect.proofs``).

Accounts, keys, rate limits, writes (202 once stored), error bodies and status codes are
the same in both modes. ``docs/interop.md`` describes the shapes route by route.
"""

from ledger.api.connect.app import create_connect_app
from ledger.api.connect.dispatch import ConnectDispatch, is_connect_request
from ledger.api.connect.ledger_reads import JsonRpcLedgerReads, LedgerReads

__all__ = [
    "ConnectDispatch",
    "JsonRpcLedgerReads",
    "LedgerReads",
    "create_connect_app",
    "is_connect_request",
]
