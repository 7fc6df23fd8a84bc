"""The end of ``notary demo``: wait for the ``anchor`` stage, export the proofs, show a check.

After the notarization run, the demo sweeps as ``notary collect`` does
(``flows.collect_proofs.collect_until_stopped``, every ``collect_first_interval_s``) until
no document of the collection waits for a stage any more, showing ledger / anchored bars
(``flows.cli.progress``) on a terminal and one line per change otherwise. Then it writes
every proof bundle and the verification page (``flows.cli.proof_export``) and prints the
three ways to check one document: ``notary verify``, the page as a ``file://`` URL, and the
page the publishing API serves while the stack runs (docs/proof-bundle.md).

When the demo runs a local test timestamp authority (``ledger.stack.local_tsa``), it also
waits (``wait_for_tokens``) until every anchored directory block of the collection has its
RFC 3161 token, so that the exported bundle has its ``<bundle>.tsr`` beside it, and prints
the ``openssl ts -verify`` command of that file against the authority's CA file, saying
each time that the authority is a LOCAL TEST AUTHORITY: not independent evidence.
"""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from flows.cli.progress import ANCHOR_BARS, watch_collection
from flows.cli.proof_export import ExportOutcome, export_bundles
from flows.settings import PipelineSettings

__all__ = [
    "LOCAL_TSA_WARNING",
    "AnchorWait",
    "export_and_explain",
    "wait_for_anchor",
    "wait_for_tokens",
]

#: How the demo names its own timestamp authority wherever it mentions it.
LOCAL_TSA_WARNING = "LOCAL TEST AUTHORITY (not independent evidence)"

#: Stages a document moves on from by itself; ``anchor`` and ``failed`` are final.
_WAITING = ("pending", "published", "multi_az", "ledger")


@dataclass(frozen=True)
class AnchorWait:
    """How the wait ended: the collection's stage counts, and whether anything still waits.

    Attributes:
        stages: stage -> documents at it, from the last sweep.
        waiting: documents not yet at ``anchor`` or ``failed``.
        seconds: how long the wait took (wall clock).
    """

    stages: dict[str, int]
    waiting: int
    seconds: float


def wait_for_anchor(
    settings: PipelineSettings, collection: str, *, console: Console, timeout_s: float
) -> AnchorWait:
    """Sweep the collection until nothing waits or ``timeout_s`` seconds have passed.

    Raises:
        ConnectorError: the audit store could not be read at the end (a sweep that fails
            is retried by the collector loop itself).
    """
    from flows.collect_proofs import collect_until_stopped

    stop = threading.Event()
    timer = threading.Timer(timeout_s, stop.set)
    last: dict[str, Any] = {"stages": {}, "anchored": -1}
    steady = settings.model_copy(update={"collect_interval_s": settings.collect_first_interval_s})

    def on_sweep(result: dict[str, Any], _woken: bool) -> None:
        stages = result["stages"]
        last["stages"] = stages
        if not console.is_terminal and stages.get("anchor", 0) != last["anchored"]:
            total = sum(stages.values())
            console.print(f"anchored {stages.get('anchor', 0)} of {total}")
        last["anchored"] = stages.get("anchor", 0)
        if not sum(stages.get(s, 0) for s in _WAITING):
            stop.set()

    started = time.perf_counter()
    timer.start()
    try:
        with watch_collection(settings.audit_url, collection, console=console, bars=ANCHOR_BARS):
            collect_until_stopped(steady, collection, stop=stop, on_sweep=on_sweep)
    finally:
        timer.cancel()
    stages = dict(last["stages"])
    waiting = sum(stages.get(s, 0) for s in _WAITING)
    return AnchorWait(stages, waiting, time.perf_counter() - started)


def wait_for_tokens(
    settings: PipelineSettings, collection: str, *, timeout_s: float, interval_s: float = 0.5
) -> bool:
    """Wait until every directory block holding an anchored document of ``collection`` has
    an RFC 3161 token at the anchoring service (``anchor-timestamps``), at most
    ``timeout_s`` seconds; whether they all have one.

    Raises:
        ConnectorError: the audit store or the anchoring service could not be read.
    """
    from flows.pipeline import open_services

    deadline = time.monotonic() + timeout_s
    with open_services(settings) as services:
        records = services.store.proofs.iter_records(collection=collection)
        heights = {h for r in records if (h := r.notarization.dblock_height) is not None}
        while True:
            missing = [
                h for h in heights if not (services.anchor.timestamps(h) or {}).get("rfc3161")
            ]
            if not missing:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval_s)


def export_and_explain(
    settings: PipelineSettings,
    collection: str,
    *,
    folder: Path,
    out_dir: Path,
    page_url: str,
    console: Console,
    tsa_ca_file: Path | None = None,
) -> ExportOutcome:
    """Export the collection's bundles and the page into ``out_dir``; print how to check.

    Args:
        folder: the notarized folder (a document's path is relative to it).
        page_url: where the running publishing API serves the page (``GET /verify``).
        tsa_ca_file: the CA file of the demo's local test TSA, when it runs one: the
            ``openssl ts -verify`` command of the shown bundle's ``.tsr`` is printed too.

    Raises:
        ConnectorError: the node or the anchoring service could not be reached.
    """
    from flows.pipeline import open_services

    started = time.perf_counter()
    with open_services(settings) as services:
        outcome = export_bundles(services, out_dir, collection=collection, html=True)
    kept = f" ({len(outcome.unchanged)} more were there, unchanged)" if outcome.unchanged else ""
    console.print(
        f"Wrote {len(outcome.written)} proof bundles{kept} and the verification page to"
        f" {out_dir} in {time.perf_counter() - started:.1f} s."
    )
    for message in [*outcome.failed, *outcome.refused][:5]:
        console.print(f"[yellow]note:[/yellow] bundle not written: {escape(message)}")
    exported = [*outcome.written, *outcome.unchanged]
    if not exported or outcome.page is None:
        return outcome
    bundle = exported[0]
    document = folder / outcome.sources[bundle]
    command = f"notary verify {shlex.quote(str(document))} --proof {shlex.quote(str(bundle))}"
    console.print("Check a document against its proof, with every service stopped:")
    console.print(f"  {escape(command)}", soft_wrap=True, highlight=False)
    console.print("or in a browser: open this page and drop the file and its .proof.json on it")
    console.print(f"  {outcome.page.resolve().as_uri()}", soft_wrap=True, highlight=False)
    console.print(f"  (while `notary up` runs, the same page is also at {page_url})")
    if tsa_ca_file is not None:
        _explain_token(bundle, tsa_ca_file, console)
    return outcome


def _explain_token(bundle_file: Path, ca_file: Path, console: Console) -> None:
    """The ``openssl ts -verify`` command of ``bundle_file``'s first token, if it has one."""
    from ledger.core.proof.bundle import ProofBundle

    token_file = bundle_file.with_name(bundle_file.name + ".tsr")
    timestamps = ProofBundle.loads(bundle_file.read_text(encoding="utf-8")).timestamps
    if timestamps is None or not token_file.is_file():
        console.print(
            f"[yellow]note:[/yellow] no RFC 3161 token in that proof yet (the demo's "
            f"{LOCAL_TSA_WARNING} did not answer in time)"
        )
        return
    command = shlex.join(
        ["openssl", "ts", "-verify", "-digest", timestamps.root.hex(),
         "-in", str(token_file), "-CAfile", str(ca_file)]
    )  # fmt: skip
    console.print(
        f"Its RFC 3161 token, from the demo's {LOCAL_TSA_WARNING}, checks with OpenSSL "
        f"(the authority's CA is {escape(str(ca_file))}):"
    )
    console.print(f"  {escape(command)}", soft_wrap=True, highlight=False)
