"""``notary verify FILE --proof BUNDLE``: check a file against its proof bundle, offline.

No service is contacted: the file is hashed here and the bundle is checked with the pure
verifier ``ledger.core.proof.verify.verify_bundle`` (numbered steps, docs/proof-bundle.md).
Each step is printed as it passes; the first failing step is printed with its reason.

Exit codes (``ExitCode``): 0 every step holds; 1 a step failed (a forged, damaged or
mismatched bundle); 2 bad usage (the file or the bundle cannot be read).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from flows.cli.common import fail
from flows.cli.exit_codes import ExitCode
from ledger.core.pow.params import PowParams
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.proof.verify import verify_bundle
from ledger.core.timestamps.bundle_part import TimestampCheck, check_timestamps
from ledger.core.timestamps.tsa_chain import TsaTrust

__all__ = ["hash_file", "load_tsa_trust", "verify_command"]

_CHUNK_BYTES = 1 << 20
_TITLE_WIDTH = max(len(step.title) for step in Step)


def hash_file(path: Path) -> bytes:
    """SHA-256 of the file's bytes (raw 32 bytes), read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.digest()


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
    policy: PowParams | None = None,
    tsa_trust: TsaTrust | None = None,
    console: Console | None = None,
) -> ExitCode:
    """Verify ``file`` against the bundle in ``proof``, printing numbered steps.

    Args:
        file: the document to check.
        proof: its proof bundle (JSON).
        policy: the anchor chain to trust (default: the bundled development chain's
            name, difficulty and confirmations).
        tsa_trust: the trust store RFC 3161 tokens must chain to (``--tsa-ca``); None:
            tokens are listed as present and not checked.
        console: where to print (stdout by default).

    Returns:
        ``ExitCode.OK``, ``ExitCode.INCOMPLETE`` (a step failed) or ``ExitCode.USAGE``
        (the file or the bundle cannot be read).
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
        verify_bundle(
            bundle, document_sha256=digest, policy=policy, on_step=lambda r: _passed(out, r)
        )
    except ProofError as exc:
        _failed(out, exc)
        return ExitCode.INCOMPLETE
    out.print("[bold green]Verified:[/bold green] every step holds.")
    if bundle.timestamps is None:
        return ExitCode.OK
    root = bundle.receipt.directory_block_keymr
    return _timestamps(out, check_timestamps(bundle.timestamps, root=root, trust=tsa_trust))


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


def _line(step: Step, mark: str, text: str) -> str:
    return f"  {int(step):>2} {mark} [bold]{step.title:<{_TITLE_WIDTH}}[/bold]  {escape(text)}"


def _passed(out: Console, report: StepReport) -> None:
    mark = "[yellow]-[/yellow]" if report.skipped else "[green]✓[/green]"
    out.print(_line(report.step, mark, report.detail), soft_wrap=True)


def _failed(out: Console, exc: ProofError) -> None:
    out.print(_line(exc.step, "[red]✗[/red]", exc.reason), soft_wrap=True)
    if exc.expected is not None:
        out.print(f"      expected {exc.expected.hex()}")
    if exc.computed is not None:
        out.print(f"      computed {exc.computed.hex()}")
    out.print(
        f"[bold red]Verification failed[/bold red] at step {int(exc.step)} ({exc.step.title})."
    )
