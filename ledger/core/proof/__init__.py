"""Proof bundles: everything needed to check one notarized document offline (format v1).

The format is ``docs/proof-bundle.md``. Pure: no I/O; the pipeline, the CLI and the tests
share these modules.

- :mod:`ledger.core.proof.bundle`: the bundle as typed dataclasses, its JSON form (parse
  and render) and ``build_bundle``, which assembles one from the services' answers.
- :mod:`ledger.core.proof.verify`: ``verify_bundle``, the numbered checks.
- :mod:`ledger.core.proof.steps`: what both report in: ``Step``, ``StepReport`` and
  ``ProofError``.

This ``__init__`` imports nothing: import from the module that defines a name.
"""
