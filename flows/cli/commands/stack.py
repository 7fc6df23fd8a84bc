"""``notary up``: the bundled services, until Ctrl-C (``notary demo`` runs them around one
run: ``flows.cli.commands.demo``).

``up`` runs the node, wallet, publishing API and anchoring service (and, unless told not
to, a Prefect server the other commands reuse) until Ctrl-C. ``--rpc-auth``,
``--rpc-user`` and ``--rpc-password-file`` lock the JSON-RPC services with HTTP basic
authentication (docs/jsonrpc.md §1.1); the credentials go to
``<data_dir>/rpc-credentials`` (0600), where the other commands find them. The
``--anchor-*`` flags anchor in a Bitcoin Core or Litecoin Core node instead of the bundled
chain (``ledger.anchor.bitcoin_rpc``).
The stack writes the API key and the callback secret into the data folder itself
(``ledger.stack.Stack.prepare``); the other commands read those files.

Exit codes (``ExitCode``): 0 stopped, 3 a service could not start.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import httpx
import typer
from pydantic import SecretStr, ValidationError
from rich.markup import escape

from flows.cli.commands.wallet import WalletPassphraseFile
from flows.cli.common import BlockTime, DataDir, console, err, fail
from flows.cli.exit_codes import ExitCode
from flows.settings import PipelineSettings

if TYPE_CHECKING:
    from flows.cli.prefect_server import PrefectServer
    from ledger.stack import Stack

__all__ = ["register", "up"]

PlainWallet = Annotated[
    bool,
    typer.Option(
        "--plain-wallet",
        help="Keep the wallet unencrypted at rest (its seed readable by whoever reads the "
        "file); said at start.",
    ),
]


def register(app: typer.Typer) -> None:
    """Add the ``up`` command to ``app``."""
    app.command("up")(up)


def _stack(data_dir: Path, block_time: float, host: str = "127.0.0.1", **rpc: Any) -> Stack:
    from ledger.stack import Stack, StackSettings

    settings = StackSettings(data_dir=data_dir, block_time_s=block_time, host=host, **rpc)
    return Stack(settings)


def _rpc_options(
    rpc_auth: bool | None, rpc_user: str | None, rpc_password_file: Path | None
) -> dict[str, Any]:
    """The ``StackSettings`` fields of the ``--rpc-*`` flags (only those given, so that the
    ``NOTARY_STACK_RPC_*`` variables still apply); a user or a password file locks.

    Raises:
        typer.Exit: ``USAGE`` for contradicting flags or an unreadable password file.
    """
    options: dict[str, Any] = {}
    wants_lock = rpc_user is not None or rpc_password_file is not None
    if rpc_auth is False and wants_lock:
        fail("--no-rpc-auth cannot go with --rpc-user or --rpc-password-file", ExitCode.USAGE)
    if rpc_auth is not None or wants_lock:
        options["rpc_auth"] = True if wants_lock else rpc_auth
    if rpc_user is not None:
        options["rpc_user"] = rpc_user
    if rpc_password_file is not None:
        try:
            password = rpc_password_file.read_text().strip()
        except OSError as exc:
            fail(f"cannot read the RPC password file: {exc}", ExitCode.USAGE)
        if not password:
            fail(f"{rpc_password_file} is empty", ExitCode.USAGE)
        options["rpc_password"] = SecretStr(password)
    return options


def _tsa_options(urls: list[str] | None, ca_file: Path | None) -> dict[str, Any]:
    """The ``StackSettings`` fields of ``--tsa`` and ``--tsa-ca`` (only those given).

    Raises:
        typer.Exit: ``USAGE`` for URLs without a readable CA file of certificates.
    """
    if not urls:
        return {}
    if ca_file is None:
        fail("--tsa needs --tsa-ca (the CA its tokens must chain to)", ExitCode.USAGE)
    from ledger.core.timestamps.tsa_chain import TsaTrust

    try:
        TsaTrust.from_pem(ca_file.read_bytes(), name=ca_file.name)
    except (OSError, ValueError) as exc:
        fail(f"--tsa-ca {ca_file}: {exc}", ExitCode.USAGE)
    return {"tsa_urls": urls, "tsa_ca_file": ca_file}


def _ots_options(
    calendars: list[str] | None, minimum: int | None, headers_url: str | None
) -> dict[str, Any]:
    """The ``StackSettings`` fields of ``--ots-calendar``, ``--ots-min`` and
    ``--ots-headers`` (only those given).

    Raises:
        typer.Exit: ``USAGE`` for a minimum above the number of calendars given.
    """
    if calendars and minimum is not None and minimum > len(calendars):
        fail(f"--ots-min {minimum} but only {len(calendars)} --ots-calendar", ExitCode.USAGE)
    options: dict[str, Any] = {"ots_calendars": calendars} if calendars else {}
    if minimum is not None:
        options["ots_min"] = minimum
    if headers_url is not None:
        options["ots_headers_url"] = headers_url
    return options


def up(
    data_dir: DataDir = Path(".notary"),
    block_time: BlockTime = 2.0,
    host: Annotated[
        str,
        typer.Option(
            help="Address to bind (loopback by default); beyond loopback it needs --rpc-auth "
            "and --tls-cert-file / --tls-key-file.",
        ),
    ] = "127.0.0.1",
    rpc_auth: Annotated[
        bool | None,
        typer.Option(
            "--rpc-auth/--no-rpc-auth",
            help="Lock the node, wallet and anchoring JSON-RPC services with HTTP basic "
            "authentication (a password is generated and kept owner-only in "
            "DATA_DIR/rpc-credentials, where the other commands find it), or open them. "
            "Default: as the data folder was (locked when rpc-credentials exists).",
            show_default=False,
        ),
    ] = None,
    rpc_user: Annotated[
        str | None, typer.Option("--rpc-user", help="RPC user name (default notary); locks.")
    ] = None,
    rpc_password_file: Annotated[
        Path | None,
        typer.Option(
            "--rpc-password-file",
            help="File holding the RPC password (not the password itself: command lines "
            "are visible to other users); locks. Or NOTARY_STACK_RPC_PASSWORD.",
        ),
    ] = None,
    prefect: Annotated[
        bool,
        typer.Option(
            "--prefect/--no-prefect",
            help="Also run a Prefect server that `notary notarize`, `collect`, `table` and "
            "`watch` use instead of starting a temporary one each time.",
        ),
    ] = True,
    prefect_port: Annotated[int, typer.Option(help="Port of that Prefect server.")] = 4200,
    prefect_host: Annotated[
        str,
        typer.Option(
            help="Address of that Prefect server: loopback unless given, whatever --host "
            "says; beyond loopback it needs --prefect-auth-file.",
        ),
    ] = "127.0.0.1",
    prefect_auth_file: Annotated[
        Path | None,
        typer.Option(
            "--prefect-auth-file",
            help="File holding user:password that the Prefect server requires (Prefect's "
            "PREFECT_SERVER_API_AUTH_STRING; commands send it as PREFECT_API_AUTH_STRING).",
        ),
    ] = None,
    tls_cert_file: Annotated[
        Path | None,
        typer.Option(
            "--tls-cert-file",
            help="PEM certificate: node, wallet, anchoring and publishing API serve HTTPS "
            "only (with --tls-key-file). It must name the address the services dial "
            "(127.0.0.1 for --host 0.0.0.0) and the one remote clients use.",
        ),
    ] = None,
    tls_key_file: Annotated[
        Path | None, typer.Option("--tls-key-file", help="PEM private key of that certificate.")
    ] = None,
    tls_ca_file: Annotated[
        Path | None,
        typer.Option(
            "--tls-ca-file",
            help="Authority the services trust for that certificate when they call each "
            "other (default: the system's); give it to the pipeline as "
            "NOTARY_NODE_TLS_CA_FILE / NOTARY_ANCHOR_TLS_CA_FILE.",
        ),
    ] = None,
    anchor_chain: Annotated[
        str | None,
        typer.Option(
            "--anchor-chain",
            help="Where directory blocks are anchored: 'embedded' (the bundled chain, "
            "default) or 'bitcoin-rpc' (a Bitcoin Core or Litecoin Core node's wallet).",
        ),
    ] = None,
    anchor_rpc_url: Annotated[
        str | None,
        typer.Option("--anchor-rpc-url", help="RPC URL of that node (http://127.0.0.1:8332/)."),
    ] = None,
    anchor_rpc_user: Annotated[
        str | None, typer.Option("--anchor-rpc-user", help="Its RPC user (rpcuser).")
    ] = None,
    anchor_rpc_password_file: Annotated[
        Path | None,
        typer.Option(
            "--anchor-rpc-password-file",
            help="File holding its RPC password (or NOTARY_STACK_ANCHOR_RPC_PASSWORD).",
        ),
    ] = None,
    anchor_wallet: Annotated[
        str | None, typer.Option("--anchor-wallet", help="The node's wallet paying anchors.")
    ] = None,
    anchor_fee_rate: Annotated[
        float | None,
        typer.Option(
            "--anchor-fee-rate", help="Fee rate of anchors, sat/vB (default: the wallet's)."
        ),
    ] = None,
    anchor_coin: Annotated[
        str | None,
        typer.Option(
            "--anchor-coin", help="'bitcoin' (default) or 'litecoin': names the chain in proofs."
        ),
    ] = None,
    tsa: Annotated[
        list[str] | None,
        typer.Option(
            "--tsa",
            help="RFC 3161 timestamp authority URL: one token over every anchored directory "
            "block, checked before it is kept (repeatable; needs --tsa-ca). Or "
            "NOTARY_ANCHOR_TSA_URLS.",
        ),
    ] = None,
    tsa_ca: Annotated[
        Path | None,
        typer.Option("--tsa-ca", help="PEM file of the CA(s) the TSA tokens must chain to."),
    ] = None,
    ots_calendar: Annotated[
        list[str] | None,
        typer.Option(
            "--ots-calendar",
            help="OpenTimestamps calendar URL: every anchored directory block is submitted "
            "to it and upgraded to a Bitcoin attestation (repeatable; public ones in "
            "docs/opentimestamps.md). Or NOTARY_ANCHOR_OTS_CALENDARS.",
        ),
    ] = None,
    ots_min: Annotated[
        int | None,
        typer.Option(
            "--ots-min",
            min=1,
            help="How many of the calendars must answer (default 1). Or NOTARY_ANCHOR_OTS_MIN.",
        ),
    ] = None,
    ots_headers: Annotated[
        str | None,
        typer.Option(
            "--ots-headers",
            help="Esplora-compatible API the attested Bitcoin headers are fetched from, "
            "so bundles verify offline (e.g. https://blockstream.info/api).",
        ),
    ] = None,
    wallet_passphrase_file: WalletPassphraseFile = None,
    plain_wallet: PlainWallet = False,
) -> None:
    """Run the bundled node (8088), wallet (8089), publishing API (8090) and anchoring
    service (8091), and a Prefect server (4200), until Ctrl-C."""
    from flows.cli.prefect_server import PrefectServer
    from ledger.exposure import ExposureError, is_loopback
    from ledger.jsonrpc.credentials import CredentialsError
    from ledger.wallet_at_rest import WalletAtRestError

    tls = {"tls_cert_file": tls_cert_file, "tls_key_file": tls_key_file, "tls_ca_file": tls_ca_file}
    options = _rpc_options(rpc_auth, rpc_user, rpc_password_file)
    options |= {name: value for name, value in tls.items() if value is not None}
    anchor = {
        "anchor_chain": anchor_chain,
        "anchor_rpc_url": anchor_rpc_url,
        "anchor_rpc_user": anchor_rpc_user,
        "anchor_rpc_password_file": anchor_rpc_password_file,
        "anchor_wallet": anchor_wallet,
        "anchor_fee_rate": anchor_fee_rate,
        "anchor_coin": anchor_coin,
    }
    options |= {name: value for name, value in anchor.items() if value is not None}
    options |= _tsa_options(tsa, tsa_ca)
    options |= _ots_options(ots_calendar, ots_min, ots_headers)
    options |= _wallet_options(wallet_passphrase_file, plain_wallet)
    prefect_auth = _prefect_auth(prefect_host, prefect_auth_file) if prefect else None
    try:
        stack = _stack(data_dir, block_time, host, **options)
        stack.prepare()
        credentials = stack.rpc_credentials()
        stack.anchor_settings().btc_access()  # a bad password file or user: usage error
    except (CredentialsError, ValidationError, WalletAtRestError, ExposureError, OSError) as exc:
        fail(str(exc), ExitCode.USAGE)
    s = stack.settings
    console.print(
        f"node    {s.node_url}\nwallet  {s.wallet_url}\napi     {s.api_url}\nanchor  {s.anchor_url}"
    )
    console.print(
        f"API key in {stack.api_key_file}; callback secret in {stack.callback_secret_file}"
    )
    if not is_loopback(s.host):
        console.print(f"listening on {escape(s.host)} (beyond loopback): locked, HTTPS only")
    if s.tls_enabled:
        console.print(
            "node, wallet, anchoring and API serve HTTPS: give the pipeline these URLs, "
            "NOTARY_NODE_TLS_CA_FILE / NOTARY_ANCHOR_TLS_CA_FILE, and SSL_CERT_FILE for the "
            "API's authority"
        )
    if credentials is None:
        console.print("JSON-RPC services open to every local process (--rpc-auth locks them)")
    else:
        console.print(
            f"JSON-RPC services locked: user {escape(credentials.user)}, credentials in "
            f"{stack.rpc_credentials_file}"
        )
    if s.anchor_chain == "bitcoin-rpc":
        node = httpx.URL(s.anchor_rpc_url)  # host and port only: a URL may hold a password
        console.print(
            f"anchoring in the {s.anchor_coin} node at {escape(f'{node.host}:{node.port}')}"
        )
    if s.tsa_urls:
        console.print(f"RFC 3161 tokens from {len(s.tsa_urls)} TSA(s), trusted by {s.tsa_ca_file}")
    if s.ots_calendars:
        console.print(f"OpenTimestamps from {s.ots_min or 1} of {len(s.ots_calendars)} calendar(s)")
    _say_wallet_at_rest(stack)
    console.print(f"block time {block_time} s. Ctrl-C stops the services.")
    server = None
    if prefect:
        settings = PipelineSettings(data_dir=data_dir)
        server = PrefectServer(
            data_dir,
            settings.prefect_api_url_file,
            host=prefect_host,
            port=prefect_port,
            auth_string=prefect_auth,
        )
        try:
            server.launch()
        except RuntimeError as exc:
            err.print(f"[yellow]note:[/yellow] no Prefect server started: {exc}")
            server = None
    try:
        asyncio.run(_serve_stack(stack, server))
    except RuntimeError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(ExitCode.UNREACHABLE) from exc
    finally:
        if server is not None:
            server.stop()
    console.print("stopped")


def _prefect_auth(prefect_host: str, auth_file: Path | None) -> str | None:
    """The Prefect server's ``user:password`` from ``auth_file``; required beyond loopback
    (docs/security.md).

    Raises:
        typer.Exit: ``USAGE`` for a Prefect host beyond loopback without it, or a file that
            cannot be read or holds no ``user:password``.
    """
    from ledger.exposure import is_loopback

    if auth_file is None:
        if not is_loopback(prefect_host):
            fail(
                f"refusing to run the Prefect server on {prefect_host} (beyond loopback) "
                "without its own authentication: add --prefect-auth-file",
                ExitCode.USAGE,
            )
        return None
    try:
        auth = auth_file.read_text().strip()
    except OSError as exc:
        fail(f"cannot read the Prefect auth file: {exc}", ExitCode.USAGE)
    if ":" not in auth:
        fail(f"{auth_file} must hold user:password", ExitCode.USAGE)
    return auth


def _wallet_options(passphrase_file: Path | None, plain: bool) -> dict[str, Any]:
    """The ``StackSettings`` fields of ``--wallet-passphrase-file`` and ``--plain-wallet``
    (only those given, so that ``NOTARY_STACK_WALLET_*`` still apply).

    Raises:
        typer.Exit: ``USAGE`` when both are given.
    """
    if plain and passphrase_file is not None:
        fail("--plain-wallet cannot go with --wallet-passphrase-file", ExitCode.USAGE)
    options: dict[str, Any] = {"wallet_plain": True} if plain else {}
    if passphrase_file is not None:
        options["wallet_passphrase_file"] = passphrase_file
    return options


def _say_wallet_at_rest(stack: Stack) -> None:
    """The start-up line about the wallet's encryption at rest."""
    at_rest = stack.wallet_at_rest()
    if at_rest.plain:
        err.print(
            f"[yellow]note:[/yellow] wallet NOT encrypted at rest (--plain-wallet): "
            f"{at_rest.wallet_file} holds its seed in clear"
        )
    else:
        console.print(f"wallet encrypted at rest; passphrase in {at_rest.source()}")


async def _serve_stack(stack: Stack, prefect_server: PrefectServer | None) -> None:
    """Serve the stack until SIGINT/SIGTERM; report the Prefect server once it answers."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if prefect_server is not None:
        # A daemon thread, not the loop's executor: stopping must not wait for it.
        threading.Thread(target=_announce_prefect, args=(prefect_server,), daemon=True).start()
    await stack.serve(stop)


def _announce_prefect(server: PrefectServer) -> None:
    try:
        url = server.wait_ready()
    except RuntimeError as exc:
        if server.launched:
            err.print(f"[yellow]note:[/yellow] {exc}; commands will use temporary servers")
        return
    console.print(f"prefect {url} (UI {url.removesuffix('/api')}), used by the other commands")
