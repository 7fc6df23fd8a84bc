"""The bundled proof-of-work chain's pure codecs: Bitcoin-like headers, transactions and
Merkle trees, the chain's parameters, and the proof-of-work hashes (SHA256d, scrypt).

Modules (no I/O): :mod:`~ledger.core.pow.encoding` (little-endian reader, CompactSize,
display hex), :mod:`~ledger.core.pow.header`, :mod:`~ledger.core.pow.tx`,
:mod:`~ledger.core.pow.merkle`, :mod:`~ledger.core.pow.params`, :mod:`~ledger.core.pow.work`. The chain's storage and
mining live in the anchoring service (:mod:`ledger.anchor.chain`), which builds on these.

Byte conventions are Bitcoin's, so that the same verifier could check a real Bitcoin
header chain: integers little-endian, hashes kept in "internal" byte order, and shown
byte-reversed ("display" order) in JSON, as Bitcoin software shows them.
"""
