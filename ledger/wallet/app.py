"""Composition root of the wallet service: ``create_app(settings)`` -> Starlette app.

Serves JSON-RPC 2.0 at ``/v2`` (GET and POST; locked with HTTP basic authentication when
``rpc_user``/``rpc_password`` are set, docs/jsonrpc.md §1.1), errors with HTTP 400 as factom-walletd does
(its ``wsapi/errors.go`` ``httpBad``): clients such as the ``factom-api`` package treat only
a status of 400 or more as an error reply.
The wallet file is opened (and created on first start) when the app is built; the node
client and the file are closed by the app's lifespan.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.applications import Starlette

from ledger.core.clock import Clock, SystemClock
from ledger.jsonrpc import AsyncJsonRpcClient
from ledger.rpc_serving import create_rpc_app
from ledger.serving import service_lifespan
from ledger.wallet.errors import WalletStateError
from ledger.wallet.keyring import Keyring, initialize_store
from ledger.wallet.methods import build_registry
from ledger.wallet.node_link import HeightSource, NodeLink
from ledger.wallet.observability import wallet_observability
from ledger.wallet.settings import WalletSettings
from ledger.wallet.store import SqliteWalletStore, WalletStore
from ledger.wallet.tx_book import TransactionBook

__all__ = ["create_app", "open_keyring"]

_STARTUP_UNLOCK_S = 60


def open_keyring(store: WalletStore, settings: WalletSettings, *, clock: Clock) -> Keyring:
    """Initialize ``store`` if new, import ``settings.import_secrets``, return its keyring.

    Raises:
        WalletStateError: a new encrypted wallet without passphrase; ``encrypted`` asked for an
            existing unencrypted file; secrets to import into an encrypted wallet, or
            ``unlocked_while_serving``, without passphrase.
        IncorrectPassphraseError: ``passphrase`` does not open an existing encrypted wallet.
        InvalidMnemonicError / AddressError: bad ``restore_mnemonic`` / ``import_secrets``.
    """
    passphrase = settings.passphrase.get_secret_value() if settings.passphrase else None
    if settings.encrypted and passphrase is None and store.get_meta("format") is None:
        raise WalletStateError("an encrypted wallet needs NOTARY_WALLET_PASSPHRASE to be created")
    mnemonic = settings.restore_mnemonic
    initialize_store(
        store,
        mnemonic=mnemonic.get_secret_value() if mnemonic else None,
        passphrase=passphrase if settings.encrypted else None,
        kdf_opslimit=settings.kdf_opslimit,
        kdf_memlimit_bytes=settings.kdf_memlimit_bytes,
    )
    keyring = Keyring(store, clock=clock, max_unlock_s=settings.max_unlock_s)
    if settings.encrypted and not keyring.encrypted:
        raise WalletStateError("encrypted=true but the existing wallet file is not encrypted")
    serving_unlocked = settings.unlocked_while_serving and keyring.encrypted
    if serving_unlocked:
        if passphrase is None:
            raise WalletStateError("unlocked_while_serving needs the wallet's passphrase")
        keyring.unlock(passphrase, settings.max_unlock_s)
    if settings.import_secrets:
        _import_at_startup(keyring, settings, passphrase, unlocked=serving_unlocked)
    return keyring


def _import_at_startup(
    keyring: Keyring, settings: WalletSettings, passphrase: str | None, *, unlocked: bool
) -> None:
    if keyring.encrypted and not unlocked:
        if passphrase is None:
            raise WalletStateError(
                "importing secrets into an encrypted wallet needs its passphrase"
            )
        keyring.unlock(passphrase, _STARTUP_UNLOCK_S)
    try:
        for secret in settings.import_secrets:
            keyring.import_secret(secret.get_secret_value(), kinds=("fct", "ec", "identity"))
    finally:
        if not unlocked:
            keyring.lock()


def create_app(
    settings: WalletSettings,
    *,
    clock: Clock | None = None,
    store: WalletStore | None = None,
    heights: HeightSource | None = None,
    node: NodeLink | None = None,
) -> Starlette:
    """Build the wallet service app.

    Args:
        settings: the service configuration.
        clock: time source for commit and transaction timestamps and unlock expiry
            (default: system clock).
        store: wallet storage (default: the SQLite file ``settings.db_path``).
        heights: source of ``get-height`` (default: ``node``).
        node: the node questions (EC rate, balances, chains, coin blocks); default: a
            ``NodeLink`` over a client of ``settings.node_url``, closed with the app.

    The app exposes ``app.state.keyring``, ``app.state.transactions`` (the
    ``TransactionBook``), ``app.state.settings`` and ``app.state.observability`` (health
    checks and metrics, ``ledger.wallet.observability``).
    """
    clock = clock or SystemClock()
    owned_store = store is None
    store = store if store is not None else SqliteWalletStore(settings.db_path)
    try:
        keyring = open_keyring(store, settings, clock=clock)
    except Exception:
        if owned_store:
            store.close()
        raise
    node_client = None
    if node is None:
        node_client = AsyncJsonRpcClient(
            settings.node_url, timeout_s=settings.node_timeout_s, access=settings.node_access()
        )
        node = NodeLink(node_client)
    heights = heights if heights is not None else node
    book = TransactionBook(store, keyring, clock=clock)

    owned: list[Callable[[], Awaitable[None] | None]] = []
    if node_client is not None:
        owned.append(node_client.aclose)
    if owned_store:
        owned.append(store.close)
    registry = build_registry(keyring, clock=clock, heights=heights, node=node, book=book)
    app, observability = create_rpc_app(
        "wallet",
        registry,
        settings,
        realm="notary wallet RPC",
        lifespan=service_lifespan(close=owned),
    )
    app.state.keyring = keyring
    app.state.transactions = book
    app.state.settings = settings
    app.state.observability = wallet_observability(
        base=observability,
        keyring=keyring,
        store=store,
        db_path=settings.db_path if owned_store else None,
        heights=heights,
    )
    return app
