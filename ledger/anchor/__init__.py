"""Anchoring: the bundled proof-of-work chain, the anchor backend interface and the
anchoring service (anchormaker-like) that anchors directory block KeyMRs and writes
signed anchor records back into the ledger.

Modules:

- :mod:`ledger.anchor.pow`: the bundled proof-of-work chain (pure codecs + SQLite store).
- :mod:`ledger.anchor.backend`: ``AnchorBackend`` protocol and the embedded default.
- :mod:`ledger.anchor.state`: the service's own record of what it anchored.
- :mod:`ledger.anchor.service`: the polling / submitting / recording loop.
- :mod:`ledger.anchor.rpc`, :mod:`ledger.anchor.app`: JSON-RPC at ``/v2`` (port 8091).

This package's ``__init__`` imports nothing, so the pure codecs under ``ledger.anchor.pow``
can be used by ``ledger.core.proof`` without pulling in storage or HTTP code.
"""
