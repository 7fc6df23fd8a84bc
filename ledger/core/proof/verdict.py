"""What a verified bundle proves, under which policy, and since when.

``verify_bundle`` returns a ``Verdict`` once every step holds. It names the policy applied
and words the date as the anchor gives it (docs/proof-bundle.md, "The date"):

- the document existed no later than the anchor block's header time (a Bitcoin-style
  header's ``timestamp``, Unix seconds), as stated by the miner of that block;
- where the policy gives a median-time span (11 headers on Bitcoin and Litecoin) and the
  bundle carries that many headers from the anchor's block on, also no later than their
  median time, which no single miner can move;
- the directory block's own start time is the operator's claim, not the proof's.

A policy whose chain is not independent evidence (the bundled chain, regtest, test
networks) makes the verdict say so, in the policy's own note. The independent timestamps
of a version-3 bundle (RFC 3161 tokens, OpenTimestamps proofs) are listed beside this
chain anchor, each with the time it bounds, by ``ledger.core.proof.anchors.list_anchors``,
which also gives the overall date. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ledger.core.proof.policy import TrustPolicy

__all__ = ["Verdict", "format_utc"]


def format_utc(seconds: int) -> str:
    """``YYYY-MM-DD HH:MM:SS UTC`` of Unix ``seconds``; the raw count when out of range."""
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{seconds} s after the Unix epoch"


@dataclass(frozen=True)
class Verdict:
    """A bundle that holds under ``policy``.

    Attributes:
        policy: the trust policy applied.
        version: the bundle version.
        confirmations: headers from the anchor's block on (that block included).
        anchor_time_s: the anchor block's header time, Unix seconds.
        median_time_s: the median header time of the policy's span, or None.
        operator_time_s: the directory block's start, Unix seconds (the operator's claim).
        window: whether a window anchor was checked too.
    """

    policy: TrustPolicy
    version: int
    confirmations: int
    anchor_time_s: int
    median_time_s: int | None
    operator_time_s: int
    window: bool

    @property
    def independent(self) -> bool:
        """Whether the policy's chain is evidence independent of the operator."""
        return self.policy.independent

    def lines(self) -> list[str]:
        """The verdict in words, one sentence a line (the CLI and the report print them)."""
        p = self.policy
        lines = [
            f"Policy {p.name}: {p.note}." if p.note else f"Policy {p.name}.",
            f"The document existed no later than {format_utc(self.anchor_time_s)}"
            " (the anchor block's header time).",
        ]
        if self.median_time_s is not None:
            lines.append(
                f"By the median time of {p.median_time_span} headers from the anchor block on:"
                f" no later than {format_utc(self.median_time_s)}."
            )
        lines.append(f"{self.confirmations} confirmations ({p.confirmations} required).")
        lines.append(
            f"The directory block's own time, {format_utc(self.operator_time_s)}, is the"
            " operator's claim, not the proof's."
        )
        return lines
