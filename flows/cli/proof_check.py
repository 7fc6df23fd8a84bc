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

from flows.cli.exit_codes import ExitCode
from ledger.core.pow.params import PowParams
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import ProofError, Step, StepReport
from ledger.core.proof.verify import verify_bundle

__all__ = ["hash_file", "verify_command"]

_CHUNK_BYTES = 1 << 20
_TITLE_WIDTH = max(len(step.title) for step in Step)


def hash_file(path: Path) -> bytes:
    """SHA-256 of the file's bytes (raw 32 bytes), read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.digest()


def verify_command(
    file: Path,
    proof: Path,
    *,
    policy: PowParams | None = None,
    console: Console | None = None,
) -> ExitCode:
    """Verify ``file`` against the bundle in ``proof``, printing numbered steps.

    Args:
        file: the document to check.
        proof: its proof bundle (JSON).
        policy: the anchor chain to trust (default: the bundled development chain's
            name, difficulty and confirmations).
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
