"""The vocabulary of proof verification: numbered steps, step reports, one error.

``Step`` numbers the checks of ``ledger.core.proof.verify.verify_bundle`` (the table is in
that module's docstring and in ``docs/proof-bundle.md``). The pipeline's own receipt check
(``tasks.verify``) names its failures with the same steps, so a receipt rejected while
collecting and a bundle rejected by ``notary verify`` say the same thing.

Steps 2 (commitment) and 3 (aggregation) exist for bundle version 2; a version-1 bundle
reports them as skipped, so every bundle shows the same numbers.

``ProofError`` is a direct ``LedgerFormatError``: a bundle can fail at the file hash or at
the proof of work, which are not Merkle proofs (see ``ledger.core.errors``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from ledger.core.errors import LedgerFormatError

__all__ = ["ProofError", "Step", "StepReport"]


class Step(IntEnum):
    """The numbered checks of ``verify_bundle`` (table: ``ledger.core.proof.verify``)."""

    FORMAT = 0
    FILE_HASH = 1
    COMMITMENT = 2
    AGGREGATION = 3
    ENTRY = 4
    RECEIPT = 5
    DIRECTORY_BLOCK = 6
    ANCHOR_PAYLOAD = 7
    ANCHOR_INCLUSION = 8
    PROOF_OF_WORK = 9
    HEADER_LINKS = 10
    CONTRACT = 11

    @property
    def title(self) -> str:
        """Short human name of the step."""
        return _TITLES[self]


_TITLES = {
    Step.FORMAT: "bundle format",
    Step.FILE_HASH: "file hash",
    Step.COMMITMENT: "commitment",
    Step.AGGREGATION: "aggregation",
    Step.ENTRY: "entry",
    Step.RECEIPT: "Merkle steps",
    Step.DIRECTORY_BLOCK: "directory block",
    Step.ANCHOR_PAYLOAD: "anchor payload",
    Step.ANCHOR_INCLUSION: "anchor transaction",
    Step.PROOF_OF_WORK: "proof of work",
    Step.HEADER_LINKS: "header links",
    Step.CONTRACT: "window anchor",
}


class ProofError(LedgerFormatError):
    """A bundle that does not prove its document.

    The message is ``"step N (title): reason"``, followed by ``" (expected <hex>, computed
    <hex>)"`` when both are known.

    Attributes:
        step: the failed ``Step``.
        reason: the message without the step prefix and the hashes.
        index: the item within the step (Merkle node, header), when there is one.
        expected / computed: raw bytes, when the failure is a mismatch.
    """

    def __init__(
        self,
        step: Step,
        message: str,
        *,
        index: int | None = None,
        expected: bytes | None = None,
        computed: bytes | None = None,
    ) -> None:
        detail = f"step {int(step)} ({step.title}): {message}"
        if expected is not None and computed is not None:
            detail += f" (expected {expected.hex()}, computed {computed.hex()})"
        super().__init__(detail)
        self.step = step
        self.reason = message
        self.index = index
        self.expected = expected
        self.computed = computed


@dataclass(frozen=True)
class StepReport:
    """One passed (or skipped) step, as told to ``verify_bundle``'s ``on_step``."""

    step: Step
    detail: str
    skipped: bool = False
