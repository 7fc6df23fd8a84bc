"""The wallet service: keys, addresses, identity keys and composed node calls (JSON-RPC :8089/v2).

Public names:

- ``create_app(settings, *, clock=None, store=None, heights=None)`` -> Starlette app
- ``WalletSettings`` (env prefix ``NOTARY_WALLET_``)
- ``Keyring``, ``KeyPair``, ``initialize_store``, ``import_secrets``
- ``SqliteWalletStore``, ``MemoryWalletStore``, ``WalletStore``, ``StoredKey``
- errors: ``WalletError`` and subclasses (``ledger.wallet.errors``)
"""

from ledger.wallet.app import create_app, open_keyring
from ledger.wallet.errors import (
    IncorrectPassphraseError,
    InvalidMnemonicError,
    NodeUnavailableError,
    UnknownKeyError,
    WalletError,
    WalletLockedError,
    WalletNotEncryptedError,
    WalletStateError,
)
from ledger.wallet.keyring import KeyPair, Keyring, import_secrets, initialize_store
from ledger.wallet.settings import WalletSettings
from ledger.wallet.store import MemoryWalletStore, SqliteWalletStore, StoredKey, WalletStore

__all__ = [
    "IncorrectPassphraseError",
    "InvalidMnemonicError",
    "KeyPair",
    "Keyring",
    "MemoryWalletStore",
    "NodeUnavailableError",
    "SqliteWalletStore",
    "StoredKey",
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
