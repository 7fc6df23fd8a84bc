"""``notary demo``: the bundled services around one run, ending with a proof to check.

The demo starts the services in a background thread (``ledger.stack.StackThread``),
notarizes one folder end to end, prints the summary, waits for the ``anchor`` stage,
exports the proof bundles and the verification page (``flows.cli.demo_ending``), shows how
to check one document, and stops.

Unless told not to (``--no-local-tsa``), it also runs OpenSSL's timestamp authority on
loopback (``ledger.stack.local_tsa``; its key and CA in ``<data_dir>/local-tsa/``,
owner-only, kept for the next demo) and gives it to the anchoring service, so that the
first proof carries an RFC 3161 token (``<bundle>.tsr``) with the ``openssl ts -verify``
command that checks it; every time it is mentioned it is called a LOCAL TEST AUTHORITY:
not independent evidence. Without the ``openssl`` command the demo runs without one and
says so.

Exit codes (``ExitCode``): as for ``notary notarize``, and 1 when documents are still not
anchored after ``--anchor-wait``; 3 when the services could not start.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from flows.cli.commands.notarize import run_folder_flow
from flows.cli.common import BlockTime, DataDir, console, err, fail
from flows.cli.exit_codes import ExitCode
from flows.cli.run_output import run_exit_code
from flows.settings import PipelineSettings

if TYPE_CHECKING:
    from ledger.stack import LocalTsaServer

__all__ = ["LOCAL_TSA_FOLDER", "demo", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``demo`` command to ``app``."""
    app.command("demo")(demo)


def demo(
    folder: Annotated[Path, typer.Argument(help="Folder to notarize.")] = Path("/usr/share/doc"),
    data_dir: DataDir = Path(".notary"),
    block_time: BlockTime = 2.0,
    anchor_wait: Annotated[
        float,
        typer.Option(
            "--anchor-wait",
            min=0,
            help="Seconds to wait for the anchor stage before exporting the proofs "
            "(0: do not wait or export).",
        ),
    ] = 300.0,
    local_tsa: Annotated[
        bool,
        typer.Option(
            "--local-tsa/--no-local-tsa",
            help="Run OpenSSL's RFC 3161 timestamp authority on loopback, so that the "
            "proofs carry a token: a LOCAL TEST AUTHORITY, not independent evidence "
            "(needs the openssl command).",
        ),
    ] = True,
) -> None:
    """Start the bundled stack, notarize FOLDER end to end, wait for the anchors, export
    the proofs and the verification page (DATA_DIR/proofs), show how to check one, stop."""
    tsa = _start_local_tsa(data_dir) if local_tsa else None
    try:
        _demo(folder, data_dir, block_time, anchor_wait, tsa)
    finally:
        if tsa is not None:
            tsa.stop()


def _demo(
    folder: Path,
    data_dir: Path,
    block_time: float,
    anchor_wait: float,
    tsa: LocalTsaServer | None,
) -> None:
    from ledger.stack import Stack, StackSettings, StackThread
    from ledger.wallet_at_rest import WalletAtRestError

    tsa_ca_file = None if tsa is None else tsa.authority.ca_file
    # The local TSA replaces any of NOTARY_STACK_TSA_URLS; without it, those apply.
    local: dict[str, Any] = {}
    if tsa is not None:
        local = {"tsa_urls": [tsa.url], "tsa_ca_file": tsa_ca_file}
    stack = Stack(StackSettings(data_dir=data_dir, block_time_s=block_time, **local))
    try:
        stack.prepare()
    except WalletAtRestError as exc:
        fail(str(exc), ExitCode.USAGE)
    thread = StackThread(stack)
    console.print(f"starting node, wallet and publishing API (block time {block_time} s)…")
    try:
        thread.start()
    except RuntimeError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.UNREACHABLE) from exc
    try:
        s = stack.settings
        settings = PipelineSettings(
            data_dir=data_dir,
            api_url=s.api_url,
            node_url=s.node_url,
            anchor_url=s.anchor_url,
            node_tls_ca_file=s.tls_ca_file,
            anchor_tls_ca_file=s.tls_ca_file,
        )
        summary = run_folder_flow(folder, None, settings, wait=True)
        code = run_exit_code(summary)
        if anchor_wait > 0 and summary["documents_seen"]:
            page_url = s.url(s.api_port, VERIFY_PAGE_PATH)
            code = max(
                code,
                _anchor_and_export(
                    settings, summary, folder, anchor_wait, page_url, tsa_ca_file=tsa_ca_file
                ),
            )
    finally:
        thread.stop()
    raise typer.Exit(code)


#: Where the demo keeps its local test TSA's key, certificates and OpenSSL configuration.
LOCAL_TSA_FOLDER = "local-tsa"


def _start_local_tsa(data_dir: Path) -> LocalTsaServer | None:
    """OpenSSL's TSA on a free loopback port (its files in ``DATA_DIR/local-tsa``, kept
    for the next demo while its certificate is valid), or None without ``openssl``.

    Raises:
        typer.Exit: ``USAGE`` when its folder cannot be written.
    """
    from flows.cli.demo_ending import LOCAL_TSA_WARNING
    from ledger.stack import LocalTsaServer, find_openssl, open_tsa

    openssl = find_openssl()
    if openssl is None:
        err.print(
            "[yellow]note:[/yellow] no openssl command: the demo runs without a local test "
            "timestamp authority, and its proofs carry no RFC 3161 token "
            "(apt-get install openssl adds one)"
        )
        return None
    try:
        authority = open_tsa(data_dir / LOCAL_TSA_FOLDER)
        server = LocalTsaServer(authority, openssl=openssl)
    except OSError as exc:
        fail(f"cannot set up the local test timestamp authority: {exc}", ExitCode.USAGE)
    server.start()
    console.print(
        f"RFC 3161 tokens from a {LOCAL_TSA_WARNING}: OpenSSL's TSA at {server.url}, "
        f"started by the demo, its key in {escape(str(authority.folder))}; its CA is "
        f"{escape(str(authority.ca_file))}"
    )
    return server


#: Where the publishing API serves the verification page (``ledger.api.http.verify_page``, which
#: the command line does not import: only the stack itself is composed here).
VERIFY_PAGE_PATH = "/verify"


def _anchor_and_export(
    settings: PipelineSettings,
    summary: dict[str, object],
    folder: Path,
    timeout_s: float,
    page_url: str,
    *,
    tsa_ca_file: Path | None = None,
) -> ExitCode:
    """The demo's third stage and its proofs; ``INCOMPLETE`` when anchors are missing.
    With the local test TSA (``tsa_ca_file``), its tokens are waited for too (at most
    ``timeout_s`` more)."""
    from connectors.errors import ConnectorError
    from flows.cli.demo_ending import export_and_explain, wait_for_anchor, wait_for_tokens

    collection = str(summary["collection"])
    console.print(f"waiting for the anchor stage (at most {timeout_s:g} s)…")
    try:
        waited = wait_for_anchor(settings, collection, console=console, timeout_s=timeout_s)
        console.print(
            f"{waited.stages.get('anchor', 0)} documents anchored in {waited.seconds:.1f} s"
        )
        if waited.waiting:
            err.print(
                f"[yellow]note:[/yellow] {waited.waiting} documents are not anchored yet: "
                "`notary collect` then `notary proof export --html` finish them"
            )
        if tsa_ca_file is not None and waited.stages.get("anchor", 0):
            wait_for_tokens(settings, collection, timeout_s=timeout_s)
        outcome = export_and_explain(
            settings,
            collection,
            folder=folder,
            out_dir=settings.data_dir / "proofs",
            page_url=page_url,
            console=console,
            tsa_ca_file=tsa_ca_file,
        )
    except ConnectorError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        return ExitCode.UNREACHABLE
    return ExitCode.INCOMPLETE if waited.waiting or outcome.failed else ExitCode.OK
