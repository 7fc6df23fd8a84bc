"""Independent timestamps of an anchored root: RFC 3161 tokens (pure; no I/O).

- :mod:`ledger.core.timestamps.rfc3161`: build a time-stamp request over a root, read a
  response, and verify a token offline against a named trust store (``TsaTrust``).
- :mod:`ledger.core.timestamps.errors`: ``TimestampError`` and its check numbers.

This ``__init__`` imports nothing: import from the module that defines a name.
"""
