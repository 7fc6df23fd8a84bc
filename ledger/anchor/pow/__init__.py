"""The bundled proof-of-work chain: Bitcoin-like headers, transactions and Merkle trees.

Pure codecs (no I/O): :mod:`~ledger.anchor.pow.encoding`, :mod:`~ledger.anchor.pow.header`,
:mod:`~ledger.anchor.pow.tx`, :mod:`~ledger.anchor.pow.merkle`, :mod:`~ledger.anchor.pow.params`.
Storage and mining: :mod:`~ledger.anchor.pow.chain` (SQLite).

Byte conventions are Bitcoin's, so that the same verifier could check a real Bitcoin
header chain: integers little-endian, hashes kept in "internal" byte order, and shown
byte-reversed ("display" order) in JSON, as Bitcoin software shows them.
"""
