"""Proof bundles: everything needed to check one notarized document offline (versions 1, 2, 3).

The format is ``docs/proof-bundle.md``. Pure: no I/O; the pipeline, the CLI and the tests
share these modules.

- :mod:`ledger.core.proof.bundle`: the bundle as typed dataclasses, its JSON form (parse
  and render) and ``build_bundle``, which assembles one from the services' answers.
- :mod:`ledger.core.proof.verify`: ``verify_bundle``, the numbered checks in order; the
  checks themselves are in :mod:`~ledger.core.proof.document_steps` (1-4: file hash,
  commitment, aggregation, entry), :mod:`~ledger.core.proof.ledger_steps` (5-6: receipt,
  directory block) and :mod:`~ledger.core.proof.anchor_steps` (7-11: the anchors).
- :mod:`ledger.core.proof.steps`: what all report in: ``Step``, ``StepReport`` and
  ``ProofError``.
- :mod:`ledger.core.proof.policy`: the trust policies ``verify_bundle`` requires (shipped:
  ``bitcoin-mainnet`` ... ``devnet``; or read from a policy file).
- :mod:`ledger.core.proof.verdict`: what a bundle that holds proves, under which policy,
  and since when.
- :mod:`ledger.core.proof.checkpoints`: Bitcoin mainnet checkpoints (bitcoinj's, shipped
  as data) that place historic headers by their difficulty period.
- :mod:`ledger.core.proof.anchors`: every anchor of a verified bundle (chain, RFC 3161,
  OpenTimestamps) with the time it bounds, and the overall date.

This ``__init__`` imports nothing: import from the module that defines a name.
"""
