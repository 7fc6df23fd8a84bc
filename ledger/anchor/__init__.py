"""Anchoring: the bundled proof-of-work chain, the anchor backend interface and the
anchoring service (anchormaker-like) that anchors directory block KeyMRs and writes
signed anchor records back into the ledger.

Modules:

- :mod:`ledger.anchor.chain`: the bundled proof-of-work chain's store (SQLite) and miner;
  its pure codecs (headers, transactions, Merkle paths, parameters) are protocol
  primitives in :mod:`ledger.core.pow`, shared with the proof verifier.
- :mod:`ledger.anchor.backend`: ``AnchorBackend`` protocol and the embedded default.
- :mod:`ledger.anchor.state`: the service's own record of what it anchored.
- :mod:`ledger.anchor.service`: the polling / submitting / recording loop.
- :mod:`ledger.anchor.rpc`, :mod:`ledger.anchor.app`: JSON-RPC at ``/v2`` (port 8091).
"""
