"""Every anchor of a verified bundle in one list, each with what it proves and the time it
bounds, and the overall date (docs/proof-bundle.md, "Version 3").

A bundle that ``verify_bundle`` accepted has up to three kinds of anchor over the same
root (the directory block's KeyMR):

- the **chain** anchor, under the policy applied (``Verdict``): independent evidence only
  when that policy says so (not the bundled chain, regtest or test networks);
- each **RFC 3161** token, under the TSA trust store given (``check_timestamps``); without
  one, listed as not checked;
- each **OpenTimestamps** stamp, under a Bitcoin mainnet policy (``check_ots``;
  ``ots_policy_for`` picks it: the policy applied when it is one, else the shipped
  ``bitcoin-mainnet``).

The overall date is the earliest time bound among the anchors that verify *and* are
independent; none when no independent anchor verifies. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import TrustPolicy, policy_named
from ledger.core.proof.verdict import Verdict, format_utc
from ledger.core.timestamps.bundle_part import TimestampCheck, check_timestamps
from ledger.core.timestamps.ots import BITCOIN_MAINNET_GENESIS, OtsCheck, check_ots
from ledger.core.timestamps.tsa_chain import TsaTrust

__all__ = ["Anchor", "AnchorList", "list_anchors", "ots_policy_for"]


@dataclass(frozen=True)
class Anchor:
    """One anchor and its outcome.

    Attributes:
        kind: ``chain``, ``rfc3161`` or ``opentimestamps``.
        label: its name in the list (``RFC 3161 token 1``).
        state: ``verified``, or why not (``not checked``, ``failed``, ``pending``,
            ``unverifiable``, ``invalid``).
        independent: whether it is evidence independent of the operator.
        time_s: the time it bounds (the root existed no later than it), Unix seconds, when
            verified.
        proves: one sentence: what it proves and under which trust.
    """

    kind: Literal["chain", "rfc3161", "opentimestamps"]
    label: str
    state: str
    independent: bool
    time_s: int | None
    proves: str

    def line(self) -> str:
        """One line: label, state, independence, bound and what it proves."""
        kind = "independent" if self.independent else "not independent"
        bound = "" if self.time_s is None else f", no later than {format_utc(self.time_s)}"
        return f"{self.label}: {self.state} ({kind}{bound}): {self.proves}"


@dataclass(frozen=True)
class AnchorList:
    """The anchors of a bundle and the check outcomes behind them.

    Attributes:
        anchors: the chain anchor first, then the tokens, then the stamps.
        tokens: the RFC 3161 checks (``check_timestamps``).
        stamps: the OpenTimestamps checks (``check_ots``).
    """

    anchors: tuple[Anchor, ...]
    tokens: tuple[TimestampCheck, ...] = ()
    stamps: tuple[OtsCheck, ...] = ()

    @property
    def earliest(self) -> Anchor | None:
        """The earliest independent anchor that verifies, or None."""
        good = [
            a
            for a in self.anchors
            if a.independent and a.state == "verified" and a.time_s is not None
        ]
        return min(good, key=lambda a: a.time_s or 0, default=None)

    def lines(self) -> list[str]:
        """The list in words, then the overall date."""
        lines = [a.line() for a in self.anchors]
        first = self.earliest
        if first is None or first.time_s is None:
            lines.append("No independent anchor verifies: the proof gives no independent date.")
        else:
            lines.append(
                f"Overall: the document existed no later than {format_utc(first.time_s)}"
                f" ({first.label}, the earliest independent anchor that verifies)."
            )
        return lines


def ots_policy_for(policy: TrustPolicy) -> TrustPolicy:
    """The policy OpenTimestamps stamps are checked under: ``policy`` when it is for
    Bitcoin mainnet (its genesis), else the shipped ``bitcoin-mainnet``."""
    if policy.genesis_hash == BITCOIN_MAINNET_GENESIS:
        return policy
    return policy_named("bitcoin-mainnet")


def list_anchors(
    bundle: ProofBundle,
    verdict: Verdict,
    *,
    tsa_trust: TsaTrust | None,
    ots_policy: TrustPolicy,
) -> AnchorList:
    """All anchors of ``bundle``, which ``verify_bundle`` accepted with ``verdict``.

    Args:
        tsa_trust: the trust store RFC 3161 tokens must chain to; None: not checked.
        ots_policy: the policy OpenTimestamps headers are placed under (``ots_policy_for``).
    """
    anchors = [_chain(verdict)]
    part = bundle.timestamps
    if part is None:
        return AnchorList(tuple(anchors))
    root = bundle.receipt.directory_block_keymr
    tokens = tuple(check_timestamps(part, root=root, trust=tsa_trust))
    anchors += [_token(c) for c in tokens]
    stamps = tuple(
        check_ots(s, root, policy=ots_policy, index=i)
        if part.root == root
        else _other_root(i, ots_policy)
        for i, s in enumerate(part.opentimestamps)
    )
    anchors += [_stamp(c) for c in stamps]
    return AnchorList(tuple(anchors), tokens, stamps)


def _chain(verdict: Verdict) -> Anchor:
    p = verdict.policy
    return Anchor(
        "chain",
        f"chain anchor ({p.chain})",
        "verified",
        verdict.independent,
        verdict.anchor_time_s,
        f"under policy {p.name}, {verdict.confirmations} confirmations; {p.note or p.name}",
    )


def _token(check: TimestampCheck) -> Anchor:
    label = f"RFC 3161 token {check.index + 1}"
    if check.verdict is not None:
        v = check.verdict
        return Anchor(
            "rfc3161",
            label,
            "verified",
            True,
            int(v.gen_time.timestamp()),
            f"signed by {v.tsa}, serial {v.serial}, trusted by {v.trust}",
        )
    if check.status == "not checked":
        return Anchor("rfc3161", label, "not checked", True, None, "no TSA trust store given")
    return Anchor("rfc3161", label, "failed", True, None, check.reason or "")


def _stamp(check: OtsCheck) -> Anchor:
    label = f"OpenTimestamps stamp {check.index + 1}"
    if check.state == "verified":
        att = min(
            (a for a in check.attestations if a.state == "verified" and a.time_s is not None),
            key=lambda a: a.time_s or 0,
        )
        return Anchor(
            "opentimestamps",
            label,
            "verified",
            True,
            att.time_s,
            f"{att.describe()}; the header's time, under policy {check.policy}",
        )
    if check.state == "pending":
        proves = "nothing yet: a calendar's promise (" + ", ".join(check.pending) + ")"
        return Anchor("opentimestamps", label, "pending", True, None, proves)
    return Anchor("opentimestamps", label, check.state, True, None, "; ".join(check.reasons))


def _other_root(index: int, policy: TrustPolicy) -> OtsCheck:
    return OtsCheck(index, "invalid", policy.name, reasons=("the section stamps another root",))
