"""Pure byte-level primitives: no I/O, no globals, time only from an injected clock.

The Factom protocol's (entries, commits, addresses, keys, Merkle trees, the five block
kinds, coin transactions, receipts, anchor records), the bundled proof-of-work chain's
(``ledger.core.pow``: headers, transactions, Merkle paths, parameters) and the proof
bundle built on both (``ledger.core.proof``).

Everything here works on raw ``bytes``; hex, base58 and JSON appear only in the
``to_*`` / ``from_*`` helpers at the edges, hex always through ``ledger.core.hexbytes``.
Every error raised is a ``ledger.core.errors.LedgerFormatError``. Nothing here imports a
service package (``ledger.node``, ``ledger.wallet``, ``ledger.api``, ``ledger.anchor``,
``ledger.jsonrpc``) nor ``ledger.devnet``: the development chain's proof-of-work
parameters are defined here (``ledger.core.pow.params``) and ``ledger.devnet`` lists them.
"""
