"""Errors of the wallet service.

Exception tree::

    WalletError
    ├── WalletLockedError          an encrypted wallet is locked; secrets cannot be read
    ├── IncorrectPassphraseError   the passphrase does not open the wallet
    ├── WalletNotEncryptedError    unlock asked of a wallet that has no passphrase
    ├── UnknownKeyError            an address or identity key that is not in the wallet
    ├── InvalidMnemonicError       words that are not a valid 12-word BIP39 mnemonic
    ├── WalletStateError           a wallet file that cannot be used (missing seed, mismatch)
    └── NodeUnavailableError       the ledger node could not be asked

Secrets (seeds, Fs/Es/idsec strings, passphrases) never appear in messages or attributes.
"""

from __future__ import annotations


class WalletError(Exception):
    """Base of every error raised by ``ledger.wallet``."""


class WalletLockedError(WalletError):
    """The wallet is encrypted and not unlocked (JSON-RPC -32001)."""

    def __init__(self, message: str = "Wallet is locked") -> None:
        super().__init__(message)


class IncorrectPassphraseError(WalletError):
    """The passphrase given does not decrypt the wallet (JSON-RPC -32003)."""

    def __init__(self, message: str = "Incorrect passphrase") -> None:
        super().__init__(message)


class WalletNotEncryptedError(WalletError):
    """``unlock-wallet`` on a wallet that is stored without a passphrase."""

    def __init__(
        self,
        message: str = "Cannot unlock non-encrypted wallet. This database is always unlocked",
    ) -> None:
        super().__init__(message)


class UnknownKeyError(WalletError):
    """An address or identity key that is not held by this wallet.

    Attributes:
        public: the public string asked for (``FA``/``EC``/``idpub``; never a secret).
    """

    def __init__(self, public: str, *, what: str = "address") -> None:
        super().__init__(f"Wallet: {what} not found")
        self.public = public


class InvalidMnemonicError(WalletError, ValueError):
    """Words that are not a valid English BIP39 mnemonic (the words are not echoed)."""


class WalletStateError(WalletError):
    """A wallet store that cannot be used as configured (e.g. no seed, wrong encryption mode)."""


class NodeUnavailableError(WalletError):
    """The ledger node did not answer a request the wallet needed (e.g. ``heights``)."""
