"""``notary verify FILE --proof BUNDLE [--policy NAME|FILE]``: check a file against its
proof bundle, offline, under a named trust policy.

No service is contacted: the file is hashed here and the bundle is checked with the pure
verifier ``ledger.core.proof.verify.verify_bundle`` (numbered steps, docs/proof-bundle.md).
Each step is printed as it passes; the first failing step is printed with its reason; a
bundle that holds ends with the verdict: the policy applied and the date the anchor proves.

The policy (``ledger.core.proof.policy``): ``--policy`` names a shipped one
(``bitcoin-mainnet``, ``devnet``, ...) or a policy file (JSON). Without it, the shipped
policy whose chain the bundle names is applied, and the output says plainly that it was
assumed from the bundle; a bundle whose chain no shipped policy names needs ``--policy``.

After the steps, every anchor is listed in one place (``ledger.core.proof.anchors``): the
chain anchor, each RFC 3161 token (under ``--tsa-ca``), each OpenTimestamps stamp (under
the policy applied when it is Bitcoin mainnet's, else the shipped ``bitcoin-mainnet``),
each with what it proves and the time it bounds, then the overall date: the earliest
independent anchor that verifies.

Exit codes (``ExitCode``): 0 every step holds; 1 a step failed (a forged, damaged or
mismatched bundle), a token failed under the trust store given, or a stamp is invalid (a
pending or unverifiable stamp is not a failure); 2 bad usage (the file, the bundle or the
policy cannot be read).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from flows.cli.common import fail
from flows.cli.exit_codes import ExitCode
from ledger.core.proof.anchors import AnchorList, list_anchors, ots_policy_for
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.policy import PolicyError, TrustPolicy, policy_for_chain, policy_named
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.proof.verdict import Verdict
from ledger.core.proof.verify import verify_bundle
from ledger.core.timestamps.bundle_part import TimestampCheck
from ledger.core.timestamps.ots import OtsCheck
from ledger.core.timestamps.tsa_chain import TsaTrust

__all__ = ["hash_file", "load_tsa_trust", "read_policy", "verify_command"]

_CHUNK_BYTES = 1 << 20
_TITLE_WIDTH = max(len(step.title) for step in Step)


def hash_file(path: Path) -> bytes:
    """SHA-256 of the file's bytes (raw 32 bytes), read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.digest()


def read_policy(name_or_file: str) -> TrustPolicy:
    """The shipped policy of that name, else the policy file at that path (JSON,
    ``TrustPolicy.from_json``'s form).

    Raises:
        PolicyError: neither a shipped name nor a readable, valid policy file.
    """
    path = Path(name_or_file)
    if not path.is_file():
        return policy_named(name_or_file)
    try:
        return TrustPolicy.from_json(json.loads(path.read_bytes()))
    except (OSError, ValueError) as exc:
        if isinstance(exc, PolicyError):
            raise
        raise PolicyError(f"policy file {name_or_file}: {exc}") from exc


def load_tsa_trust(ca_file: Path | None) -> TsaTrust | None:
    """The trust store of ``--tsa-ca`` (named by its file name), None without one.

    Raises:
        typer.Exit: ``USAGE`` when the file cannot be read or holds no certificate.
    """
    if ca_file is None:
        return None
    try:
        return TsaTrust.from_pem(ca_file.read_bytes(), name=ca_file.name)
    except (OSError, ValueError) as exc:
        fail(f"--tsa-ca {ca_file}: {exc}", ExitCode.USAGE)


def verify_command(
    file: Path,
    proof: Path,
    *,
    policy: TrustPolicy | None,
    tsa_trust: TsaTrust | None = None,
    console: Console | None = None,
) -> ExitCode:
    """Verify ``file`` against the bundle in ``proof``, printing numbered steps.

    Args:
        file: the document to check.
        proof: its proof bundle (JSON).
        policy: the trust policy to apply; None: the shipped policy the bundle's chain
            names, printed as assumed (``ExitCode.USAGE`` when none does).
        tsa_trust: the trust store RFC 3161 tokens must chain to (``--tsa-ca``); None:
            tokens are listed as present and not checked.
        console: where to print (stdout by default).

    Returns:
        ``ExitCode.OK``, ``ExitCode.INCOMPLETE`` (a step failed) or ``ExitCode.USAGE``
        (the file or the bundle cannot be read, or no policy applies).
    """
    out = console or Console()
    try:
        digest = hash_file(file)
        text = proof.read_bytes()
    except OSError as exc:
        out.print(f"[red]error:[/red] {escape(str(exc))}")
        return ExitCode.USAGE
    out.print(f"Verifying [bold]{escape(str(file))}[/bold] with [bold]{escape(str(proof))}[/bold]")
    try:
        bundle = ProofBundle.loads(text)
        if policy is None:
            policy = _assumed(out, bundle)
            if policy is None:
                return ExitCode.USAGE
        else:
            out.print(f"Policy [bold]{escape(policy.name)}[/bold] (given with --policy).")
        verdict = verify_bundle(
            bundle, document_sha256=digest, policy=policy, on_step=lambda r: _passed(out, r)
        )
    except ProofError as exc:
        _failed(out, exc, policy)
        return ExitCode.INCOMPLETE
    _verified(out, verdict)
    anchors = list_anchors(bundle, verdict, tsa_trust=tsa_trust, ots_policy=ots_policy_for(policy))
    code = ExitCode.OK
    if anchors.tokens:
        code = _timestamps(out, list(anchors.tokens))
    if anchors.stamps and _stamps(out, anchors.stamps) != ExitCode.OK:
        code = ExitCode.INCOMPLETE
    _anchors(out, anchors)
    return code


def _stamps(out: Console, checks: tuple[OtsCheck, ...]) -> ExitCode:
    """Print one line per OpenTimestamps stamp; INCOMPLETE when one is invalid."""
    out.print(
        "OpenTimestamps proofs of the directory block's KeyMR"
        f" (Bitcoin headers placed under policy {escape(checks[0].policy)}):"
    )
    marks = {"verified": "[green]✓[/green]", "invalid": "[red]✗[/red]"}
    for check in checks:
        mark = marks.get(check.state, "[yellow]-[/yellow]")
        if check.state == "verified":
            text = "; ".join(a.describe() for a in check.attestations if a.state == "verified")
        elif check.state == "pending":
            text = "a calendar's promise, not yet in Bitcoin (" + ", ".join(check.pending) + ")"
        else:
            text = "; ".join(check.reasons)
        out.print(
            f"   {mark} stamp {check.index + 1}: {check.state}: {escape(text)}", soft_wrap=True
        )
    if any(c.state == "invalid" for c in checks):
        out.print("[bold red]An OpenTimestamps stamp is invalid.[/bold red]")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _anchors(out: Console, anchors: AnchorList) -> None:
    """Every anchor in one place, then the overall date."""
    out.print("All anchors of this proof:")
    for line in anchors.lines():
        out.print(f"  {escape(line)}", soft_wrap=True)


def _timestamps(out: Console, checks: list[TimestampCheck]) -> ExitCode:
    """Print one line per RFC 3161 token, then the date the verified ones bound."""
    out.print("Independent timestamps of the directory block's KeyMR (RFC 3161):")
    for check in checks:
        if check.verdict is not None:
            out.print(
                f"   [green]✓[/green] token {check.index + 1}: {escape(check.verdict.describe())}"
            )
        elif check.status == "not checked":
            out.print(
                f"   [yellow]-[/yellow] token {check.index + 1}: present, not checked"
                " (give --tsa-ca FILE to check it)"
            )
        else:
            out.print(f"   [red]✗[/red] token {check.index + 1}: {escape(check.reason or '')}")
    times = [c.verdict.gen_time for c in checks if c.verdict is not None]
    if times:
        out.print(f"The document existed no later than {min(times).isoformat()} (RFC 3161).")
    if any(c.status == "failed" for c in checks):
        out.print("[bold red]A timestamp token failed[/bold red] under the trust store given.")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _assumed(out: Console, bundle: ProofBundle) -> TrustPolicy | None:
    chain = bundle.anchor.chain
    policy = policy_for_chain(chain)
    if policy is None:
        out.print(
            f"[red]error:[/red] no shipped policy trusts chain {escape(repr(chain))}:"
            " pass --policy NAME or --policy FILE"
        )
        return None
    out.print(
        f"Policy [bold]{escape(policy.name)}[/bold]: assumed from the bundle's chain"
        f" {escape(repr(chain))} (no --policy given)."
    )
    return policy


def _line(step: Step, mark: str, text: str) -> str:
    return f"  {int(step):>2} {mark} [bold]{step.title:<{_TITLE_WIDTH}}[/bold]  {escape(text)}"


def _passed(out: Console, report: StepReport) -> None:
    mark = "[yellow]-[/yellow]" if report.skipped else "[green]✓[/green]"
    out.print(_line(report.step, mark, report.detail), soft_wrap=True)


def _failed(out: Console, exc: ProofError, policy: TrustPolicy | None) -> None:
    out.print(_line(exc.step, "[red]✗[/red]", exc.reason), soft_wrap=True)
    if exc.expected is not None:
        out.print(f"      expected {exc.expected.hex()}")
    if exc.computed is not None:
        out.print(f"      computed {exc.computed.hex()}")
    under = "" if policy is None else f" under policy {escape(policy.name)}"
    out.print(
        f"[bold red]Verification failed[/bold red] at step {int(exc.step)}"
        f" ({exc.step.title}){under}."
    )


def _verified(out: Console, verdict: Verdict) -> None:
    name = escape(verdict.policy.name)
    if verdict.independent:
        out.print(f"[bold green]Verified[/bold green] under policy {name}: every step holds.")
    else:
        out.print(
            f"[bold yellow]Verified[/bold yellow] under policy {name}: every step holds,"
            " but this chain is not independent evidence."
        )
    for line in verdict.lines():
        out.print(f"  {escape(line)}", soft_wrap=True)
