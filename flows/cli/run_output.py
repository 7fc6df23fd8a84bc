"""How the command line reports a notarization run: exit code and summary table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from flows.cli.exit_codes import ExitCode

__all__ = ["print_run_summary", "run_exit_code"]


def run_exit_code(summary: dict[str, Any]) -> ExitCode:
    """``INCOMPLETE`` when documents failed to publish, still wait, or had a receipt
    rejected; else ``OK``."""
    incomplete = (
        summary["publish_failed"] or summary["still_waiting"] or summary["receipts_rejected"]
    )
    return ExitCode.INCOMPLETE if incomplete else ExitCode.OK


def print_run_summary(
    s: dict[str, Any],
    console: Console,
    *,
    seen_label: str = "documents seen",
    bytes_label: str = "bytes hashed",
) -> None:
    """Print ``RunSummary.as_dict()`` (plus ``wall_seconds``) as a two-column table."""
    table = Table(title=f"Notarization of {s['source']}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    rows = [
        (seen_label, s["documents_seen"]),
        (bytes_label, f"{s['bytes_hashed']:,}"),
        ("skipped (hash already in the collection)", s["skipped_known"]),
        ("published now", s["published"]),
        ("in a directory block", s["reached_ledger"]),
        ("receipts verified", s["receipts_verified"]),
        ("still waiting", s["still_waiting"]),
        ("failed", s["publish_failed"] + s["hash_errors"] + s["receipts_rejected"]),
    ]
    if s.get("refused"):
        rows.insert(1, ("refused (links, special files, unreadable)", s["refused"]))
    for label, value in rows:
        table.add_row(label, str(value))
    for stage, seconds in s["stage_seconds"].items():
        table.add_row(f"time: {stage}", f"{seconds:.2f} s")
    table.add_row("time: total", f"{s.get('wall_seconds', 0):.2f} s")
    console.print(table)
