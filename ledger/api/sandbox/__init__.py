"""Sandbox mode of the publishing API (docs/rest-api.md §9) and the ledger it runs on.

``mode`` is the sandbox itself (``Sandbox``: its own database, purges, no anchoring);
``memory_ledger`` is the sandbox's built-in ledger (``InMemoryLedger``), a wallet and node
kept in memory behind ``LedgerGateway``. It is a part of the product, which tests also
drive because it keeps the rules the worker relies on and can inject faults.
"""
