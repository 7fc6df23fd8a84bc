"""Progress bars for long runs, read from the audit store (the record of truth).

A background thread polls the store's stage counts for one collection and updates rich
progress bars; the flow itself knows nothing about the terminal.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from connectors.audit_store import AuditStore

_PAST = {
    "queued": ("pending", "published", "multi_az", "ledger", "anchor", "failed"),
    "published": ("published", "multi_az", "ledger", "anchor"),
    "ledger": ("ledger", "anchor"),
}


@contextmanager
def watch_collection(
    audit_url: str, collection: str, *, console: Console, interval_s: float = 0.5
) -> Iterator[None]:
    """Show queued / published / in-ledger counts of ``collection`` while the block runs."""
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
    bars = {name: progress.add_task(name, total=None) for name in _PAST}

    def poll() -> None:
        while not stop.wait(interval_s):
            try:
                counts = store.summary(collection)
            except Exception:  # the display must never break the run
                continue
            total = sum(counts.get(s, 0) for s in _PAST["queued"])
            for name, stages in _PAST.items():
                progress.update(
                    bars[name], completed=sum(counts.get(s, 0) for s in stages), total=total
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
