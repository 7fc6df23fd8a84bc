"""Errors of the wallet service.

The wallet's own errors: ``ledger.wallet.rpc_errors`` renders each as the JSON-RPC error
named on the right (``ledger.jsonrpc.errors``); the wallet's logic never builds wire errors.

Exception tree::

    WalletError                                                                  -> InternalError (-32603)
    ├── WalletLockedError          an encrypted wallet is locked; secrets         -> WalletLocked (-32001)
    │                              cannot be read
    ├── IncorrectPassphraseError   the passphrase does not open the wallet        -> IncorrectPassphrase (-32003)
    ├── WalletNotEncryptedError    unlock asked of a wallet that has no passphrase
    ├── UnknownKeyError            an address or identity key that is not in      -> InvalidParams (-32602)
    │                              the wallet
    ├── InvalidMnemonicError       words that are not a valid 12-word BIP39       -> InvalidParams (-32602)
    │                              mnemonic
    ├── WalletStateError           a wallet file that cannot be used (missing
    │                              seed, mismatch)
    ├── NodeUnavailableError       the ledger node could not be asked (or
    │   │                          answered nonsense)
    │   └── NodeRefusedError       the node answered a request with a JSON-RPC
    │                              error (its code kept)
    ├── ChainNotFoundError         the node knows no chain with that ID           -> MissingChainHead (-32009)
    │                              (active-identity-keys)
    ├── NotAnIdentityError         the chain is not an application identity       -> InvalidParams (-32602)
    │                              chain (section 8.1)
    └── TransactionError           a named transaction step refused (walletd's
        │                          messages)
        └── FeeError               fee safeguard: under-paying or paying >= 10x
                                   (section 4.3)

Errors without an arrow render as their base's (Internal error, -32603).

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


class NodeRefusedError(NodeUnavailableError):
    """The node answered a wallet request with a JSON-RPC error.

    Attributes:
        method: the node method called. code: the node's error code.
    """

    def __init__(self, method: str, code: int, detail: str) -> None:
        super().__init__(f"the ledger node refused '{method}': {detail}")
        self.method = method
        self.code = code


class ChainNotFoundError(WalletError):
    """The node has no chain with this ID (JSON-RPC -32009 Missing Chain Head).

    Attributes:
        chain_id: the 32-byte chain ID asked for.
    """

    def __init__(self, chain_id: bytes) -> None:
        super().__init__("Missing Chain Head")
        self.chain_id = chain_id


class NotAnIdentityError(WalletError):
    """The chain's first entry is not an identity chain entry of docs/formats.md §8.1."""


class TransactionError(WalletError):
    """A named-transaction step was refused (walletd wording, e.g. ``wallet: ...``).

    Attributes:
        name: the transaction name concerned (None when not applicable).
    """

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class FeeError(TransactionError):
    """The fee paid is below the required fee, or at least 10 times it (docs/formats.md §4.3).

    Attributes:
        paid: inputs minus outputs, minor units (may be negative).
        required: the fee at the node's rate, minor units.
    """

    def __init__(self, message: str, *, name: str, paid: int, required: int) -> None:
        super().__init__(message, name=name)
        self.paid = paid
        self.required = required
