"""``notary proof export``: one verified proof bundle (JSON) per anchored document.

The bundles are built and checked by ``flows.cli.proof_export``; this module is the
command line around it. ``--html`` also writes the verification page (``verify.html``,
docs/proof-bundle.md) into the folder; ``--html-pages`` also a page per document with its
bundle built in.

Each version of each document gets a file of its own, never written over another file
(names and the index ``index.json``: ``flows.cli.proof_export``, README "Export names");
the count printed is the count of files written.

Exit codes (``ExitCode``): 0 every document has its bundle; 1 documents are not anchored
yet, a bundle failed verification or its name is taken by another file; 2 no API key; 3
the services could not be reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from flows.cli.common import DataDir, check_api_key, console, err, fail_unreachable
from flows.cli.exit_codes import ExitCode
from flows.settings import PipelineSettings

__all__ = ["proof_export", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``proof`` command group (``proof export``) to ``app``."""
    proof_app = typer.Typer(help="Proof bundles: one JSON file per document, verifiable offline.")
    proof_app.command("export")(proof_export)
    app.add_typer(proof_app, name="proof")


def proof_export(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the bundles to.")] = Path(
        "proofs"
    ),
    collection: Annotated[str | None, typer.Option(help="Only this collection.")] = None,
    data_dir: DataDir = Path(".notary"),
    html: Annotated[
        bool,
        typer.Option(
            "--html",
            help="Also write the verification page (verify.html): open it in a browser and "
            "drop a document and its .proof.json on it; nothing leaves the machine.",
        ),
    ] = False,
    html_pages: Annotated[
        bool,
        typer.Option(
            "--html-pages",
            help="Also write a page per document with its bundle built in "
            "(<path>.<version>.verify.html beside its .proof.json); implies --html.",
        ),
    ] = False,
) -> None:
    """Write a verified proof bundle for every anchored document of the audit store."""
    settings = PipelineSettings(data_dir=data_dir)
    check_api_key(settings)
    from connectors.errors import ConnectorError
    from flows.cli.proof_export import export_bundles
    from flows.pipeline import open_services

    try:
        with open_services(settings) as services:
            outcome = export_bundles(
                services, out, collection=collection, html=html, pages=html_pages
            )
    except ConnectorError as exc:
        fail_unreachable(exc)
    console.print(
        f"wrote {len(outcome.written)} bundles to {out}, each verified under trust policy"
        f" {settings.trust_policy} (NOTARY_TRUST_POLICY)"
    )
    if outcome.unchanged:
        console.print(f"{len(outcome.unchanged)} bundles were there already, unchanged")
    if outcome.index is not None:
        console.print(f"index of the bundles: {outcome.index}")
    if outcome.pages:
        console.print(f"wrote {len(outcome.pages)} pages with their bundle built in")
    if outcome.page is not None:
        console.print(f"verification page: {outcome.page.resolve().as_uri()}", soft_wrap=True)
    if outcome.not_anchored:
        console.print(
            f"{outcome.not_anchored} documents are not anchored yet (run `notary collect`)"
        )
    for message in outcome.failed[:10]:
        err.print(f"[red]failed:[/red] {escape(message)}")
    for message in outcome.refused[:10]:
        err.print(f"[red]not overwritten:[/red] {escape(message)}")
    if len(outcome.refused) > 10:
        err.print(f"... and {len(outcome.refused) - 10} more not overwritten")
    incomplete = outcome.failed or outcome.not_anchored or outcome.refused
    raise typer.Exit(ExitCode.INCOMPLETE if incomplete else ExitCode.OK)
