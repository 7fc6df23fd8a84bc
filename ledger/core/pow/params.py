"""Parameters of a proof-of-work anchor chain, shared by the miner and the verifier.

The bundled development chain mines every block at ``difficulty_bits`` (about that many
leading zero bits in every block hash) and counts an anchor as final after
``confirmations`` blocks (the anchor's own block included, as Bitcoin counts). The
verifier's ``devnet`` trust policy (``ledger.core.proof.policy.DEVNET``) is made from the
defaults: every header at least that hard, at least that many headers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.core.errors import LimitError
from ledger.core.pow.header import difficulty_target, target_to_bits

__all__ = ["DEV_POW_CHAIN_NAME", "DEV_POW_CONFIRMATIONS", "DEV_POW_DIFFICULTY_BITS", "PowParams"]

# The bundled development chain's parameters: the anchoring service's defaults (through
# ``ledger.devnet``, which lists them with the other development constants) and the
# verifier's ``devnet`` trust policy. Defined here so that the pure core depends on nothing.

#: Name of the bundled proof-of-work chain, written in proof bundles (``anchor.chain``).
DEV_POW_CHAIN_NAME = "notary-devnet-pow"
#: Leading zero bits of work per block: about 65,000 double SHA-256 per block, tens of
#: milliseconds in Python.
DEV_POW_DIFFICULTY_BITS = 16
#: Blocks, the anchor's own included, before an anchor counts as final.
DEV_POW_CONFIRMATIONS = 2


@dataclass(frozen=True)
class PowParams:
    """One proof-of-work chain's name, difficulty and confirmation depth.

    Attributes:
        chain: the chain's name, written in proof bundles (``anchor.chain``).
        difficulty_bits: 1..255; the target is ``difficulty_target(difficulty_bits)``.
        confirmations: blocks (the anchor's included) before an anchor counts, >= 1.

    Raises:
        LimitError: ``difficulty_bits`` or ``confirmations`` out of range.
    """

    chain: str = DEV_POW_CHAIN_NAME
    difficulty_bits: int = DEV_POW_DIFFICULTY_BITS
    confirmations: int = DEV_POW_CONFIRMATIONS

    def __post_init__(self) -> None:
        if not 1 <= self.difficulty_bits <= 255:
            raise LimitError("difficulty_bits must be in 1..255")
        if self.confirmations < 1:
            raise LimitError("confirmations must be at least 1")

    @property
    def target(self) -> int:
        """The easiest target allowed (a header's target must be at most this)."""
        return difficulty_target(self.difficulty_bits)

    @property
    def bits(self) -> int:
        """``target`` in compact form, as the miner writes it in headers."""
        return target_to_bits(self.target)
