"""How the command line reports a notarization run: exit code and summary table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from flows.cli.exit_codes import ExitCode

__all__ = ["print_refused_note", "print_run_summary", "run_exit_code"]


def run_exit_code(summary: dict[str, Any]) -> ExitCode:
    """``INCOMPLETE`` when documents of the run could not be read or hashed, failed or
    still wait, or the run saw an entry fail to publish or a receipt rejected; else
    ``OK``. (A file that cannot be read is not notarized: a scheduled run must not
    report success for it.)"""
    incomplete = (
        summary["hash_errors"]
        or summary["documents_waiting"]
        or summary["documents_failed"]
        or summary["publish_failed"]
        or summary["receipts_rejected"]
    )
    return ExitCode.INCOMPLETE if incomplete else ExitCode.OK


def print_run_summary(
    s: dict[str, Any],
    console: Console,
    *,
    seen_label: str = "documents seen",
    bytes_label: str = "bytes hashed",
    unit: str = "documents",
) -> None:
    """Print ``RunSummary.as_dict()`` (plus ``wall_seconds``) as a two-column table.

    Every line counts this run's ``unit`` (files, rows), except the ``collection total``
    lines; a line for something that did not happen (0) is left out when it is one of the
    rarer ones (refused, repeated, queued or finished for other runs). ``published now``
    counts documents; ``ledger entries written`` and ``entry credits spent`` what reached
    the ledger for them (in ``aggregate`` mode one entry serves a whole batch).
    """
    table = Table(
        title=f"Notarization of {s['source']}",
        caption=f"Counts are of this run's {unit}, except collection totals.",
        show_header=False,
    )
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any, bool]] = [  # (label, value, shown when 0)
        (seen_label, s["documents_seen"], True),
        ("refused (links, special files, unreadable)", s.get("refused", 0), False),
        (bytes_label, f"{s['bytes_hashed']:,}", True),
        ("skipped (already in the collection before this run)", s["skipped_known"], True),
        ("same content as another of this run", s["repeated_in_run"], False),
        ("queued by another run at the same time", s["queued_by_other_runs"], False),
        ("queued now", s["queued"], True),
        ("published now", s["published"], True),
        ("ledger entries written", s.get("entries_written", 0), True),
        ("entry credits spent (EC)", s.get("entry_credits", 0), True),
        ("in a directory block", s["documents_in_ledger"], True),
        ("receipts verified", s["documents_with_receipt"], True),
        ("still waiting", s["documents_waiting"], True),
        ("failed", s["hash_errors"] + s["documents_failed"], True),
        ("finished for other runs (published)", s["published_for_other_runs"], False),
    ]
    totals = s.get("collection_totals") or {}
    rows += [
        (f"collection total: {_TOTAL_LABELS[key]}", totals[key], True)
        for key in _TOTAL_LABELS
        if key in totals
    ]
    for label, value, always in rows:
        if always or value:
            table.add_row(label, str(value))
    for stage, seconds in s["stage_seconds"].items():
        table.add_row(f"time: {stage}", f"{seconds:.2f} s")
    table.add_row("time: total", f"{s.get('wall_seconds', 0):.2f} s")
    console.print(table)


#: ``RunSummary.collection_totals`` keys and how they are printed (notarizations).
_TOTAL_LABELS = {
    "in_ledger": "in a directory block",
    "with_receipt": "receipts verified",
    "waiting": "still waiting",
    "failed": "failed",
}


def print_refused_note(s: dict[str, Any], console: Console) -> None:
    """One line for the entries the run refused (links, special files, unreadable): their
    count and the file listing each with its reason (``RunSummary.refused_list``);
    nothing when none was refused."""
    if s.get("refused"):
        where = s.get("refused_list")
        listed = f"; the list is in {escape(where)}" if where else ""
        console.print(
            f"[yellow]note:[/yellow] {s['refused']} entries refused (links, special files, "
            f"unreadable){listed}",
            soft_wrap=True,
        )
