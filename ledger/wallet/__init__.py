"""The wallet service: keys, addresses, identity keys and composed node calls (JSON-RPC :8089/v2).

Public names:

- ``create_app(settings, *, clock=None, store=None, heights=None, node=None)`` -> Starlette app
- ``WalletSettings`` (env prefix ``NOTARY_WALLET_``)
- ``Keyring``, ``KeyPair``, ``initialize_store``, ``import_secrets``
- ``SqliteWalletStore``, ``MemoryWalletStore``, ``WalletStore``, ``StoredKey``
- ``NodeLink`` (the wallet's node questions), ``TransactionBook`` (named transactions)
- errors: ``WalletError`` and subclasses (``ledger.wallet.errors``)
"""

from ledger.wallet.app import create_app, open_keyring
from ledger.wallet.errors import (
    ChainNotFoundError,
    FeeError,
    IncorrectPassphraseError,
    InvalidMnemonicError,
    NodeRefusedError,
    NodeUnavailableError,
    NotAnIdentityError,
    TransactionError,
    UnknownKeyError,
    WalletError,
    WalletLockedError,
    WalletNotEncryptedError,
    WalletStateError,
)
from ledger.wallet.keyring import KeyPair, Keyring, import_secrets, initialize_store
from ledger.wallet.node_link import NodeLink
from ledger.wallet.settings import WalletSettings
from ledger.wallet.store import MemoryWalletStore, SqliteWalletStore, StoredKey, WalletStore
from ledger.wallet.tx_book import TransactionBook

__all__ = [
    "ChainNotFoundError",
    "FeeError",
    "IncorrectPassphraseError",
    "InvalidMnemonicError",
    "KeyPair",
    "Keyring",
    "MemoryWalletStore",
    "NodeLink",
    "NodeRefusedError",
    "NodeUnavailableError",
    "NotAnIdentityError",
    "SqliteWalletStore",
    "StoredKey",
    "TransactionBook",
    "TransactionError",
    "UnknownKeyError",
    "WalletError",
    "WalletLockedError",
    "WalletNotEncryptedError",
    "WalletSettings",
    "WalletStateError",
    "WalletStore",
    "create_app",
    "import_secrets",
    "initialize_store",
    "open_keyring",
]
