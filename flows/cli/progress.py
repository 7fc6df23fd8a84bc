"""Progress bars for long runs, read from the audit store (the record of truth).

A background thread polls the store's stage counts for one collection and updates rich
progress bars; the flow itself knows nothing about the terminal.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from connectors.audit import AuditStore

#: Every stage a notarization can be at; a bar's total is the count over all of them.
_ALL = ("pending", "published", "multi_az", "ledger", "anchor", "failed")
#: The bars of a notarization run: each counts the rows at one of its stages.
NOTARIZE_BARS: Mapping[str, tuple[str, ...]] = {
    "queued": _ALL,
    "published": ("published", "multi_az", "ledger", "anchor"),
    "ledger": ("ledger", "anchor"),
}
#: The bars while waiting for anchors (``notary demo``).
ANCHOR_BARS: Mapping[str, tuple[str, ...]] = {
    "ledger": ("ledger", "anchor"),
    "anchored": ("anchor",),
}


@contextmanager
def watch_collection(
    audit_url: str,
    collection: str,
    *,
    console: Console,
    interval_s: float = 0.5,
    bars: Mapping[str, tuple[str, ...]] = NOTARIZE_BARS,
) -> Iterator[None]:
    """Show the counts of ``collection`` per bar (name -> stages counted) while the block
    runs; by default queued / published / in-ledger. Nothing is shown on a non-terminal."""
    if not console.is_terminal:
        yield
        return
    store = AuditStore(audit_url)
    stop = threading.Event()
    progress = Progress(
        TextColumn("{task.description:>10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    tasks = {name: progress.add_task(name, total=None) for name in bars}

    def poll() -> None:
        while not stop.wait(interval_s):
            try:
                counts = store.runs.summary(collection)
            except Exception:  # the display must never break the run
                continue
            total = sum(counts.get(s, 0) for s in _ALL)
            for name, stages in bars.items():
                progress.update(
                    tasks[name], completed=sum(counts.get(s, 0) for s in stages), total=total
                )

    thread = threading.Thread(target=poll, name="notary-progress", daemon=True)
    with progress:
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            store.close()
