"""Independent timestamps of an anchored root: RFC 3161 tokens and OpenTimestamps proofs
(pure; no I/O).

- :mod:`ledger.core.timestamps.rfc3161`: build a time-stamp request over a root, read a
  response, and verify a token offline against a named trust store (``TsaTrust``).
- :mod:`ledger.core.timestamps.ots`: an OpenTimestamps stamp (a ``.ots`` file and the
  Bitcoin headers it attests) and its offline check under a trust policy.
- :mod:`ledger.core.timestamps.bundle_part`: the bundle's ``timestamps`` section.
- :mod:`ledger.core.timestamps.errors`: ``TimestampError`` and its check numbers;
  ``OtsError``.

This ``__init__`` imports nothing: import from the module that defines a name.
"""
