"""Configuration of the wallet service (one settings object, env prefix ``NOTARY_WALLET_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from ledger.observability.logs import LogFormat
from ledger.serving import NodeAccess, RpcServing
from ledger.wallet.sealing import DEFAULT_MEMLIMIT_BYTES, DEFAULT_OPSLIMIT

__all__ = ["WalletSettings"]


class WalletSettings(RpcServing, NodeAccess):
    """Settings of one wallet process.

    Reaching it and reaching the node (``ledger.serving``, docs/jsonrpc.md §1.1):
    ``rpc_user`` / ``rpc_password`` (``NOTARY_WALLET_RPC_USER`` / ``..._PASSWORD``) lock
    its JSON-RPC route, ``tls_cert_file`` / ``tls_key_file`` serve HTTPS, and
    ``node_rpc_user`` / ``node_rpc_password`` / ``node_tls_ca_file`` are what it sends to
    a locked node.

    Encryption at rest: a wallet file is created encrypted when ``encrypted`` is true (the
    ``passphrase`` is then required to create it). An existing file keeps the mode it was
    created with; an encrypted wallet always starts locked and is opened with
    ``unlock-wallet`` (the configured passphrase is used only to create the file and to
    import ``import_secrets`` at start-up, never to unlock the service), unless
    ``unlocked_while_serving``: the bundled stack (``ledger.stack``) keeps its wallet
    unlocked while it serves, because its publishing API signs entry credit payments
    through it; the secrets stay encrypted at rest (docs/security.md).
    """

    model_config = SettingsConfigDict(env_prefix="NOTARY_WALLET_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8089, ge=0, le=65535)
    data_dir: Path = Path(".notary/wallet")
    #: Explicit wallet file; default ``data_dir / "wallet.sqlite"``.
    wallet_file: Path | None = None
    #: The node's JSON-RPC URL (``get-height`` asks it for ``heights``).
    node_url: str = "http://127.0.0.1:8088/v2"
    node_timeout_s: float = Field(default=10.0, gt=0)
    #: Create a new wallet file encrypted under ``passphrase`` (argon2id + SecretBox).
    encrypted: bool = False
    passphrase: SecretStr | None = None
    #: argon2id cost for a new encrypted wallet (passes, memory in bytes).
    kdf_opslimit: int = Field(default=DEFAULT_OPSLIMIT, ge=1)
    kdf_memlimit_bytes: int = Field(default=DEFAULT_MEMLIMIT_BYTES, ge=8192)
    #: Unlock an encrypted wallet with ``passphrase`` at start, for ``max_unlock_s``.
    unlocked_while_serving: bool = False
    #: Longest ``unlock-wallet`` timeout honoured, seconds (walletd: 2^30).
    max_unlock_s: int = Field(default=2**30, ge=0)
    #: Fs/Es/idsec strings imported at start-up (development stack), as a JSON list.
    import_secrets: list[SecretStr] = Field(default_factory=list)
    #: 12 words to create a new wallet from (restore); a fresh mnemonic when unset.
    restore_mnemonic: SecretStr | None = None
    max_body_bytes: int = Field(default=4_194_304, gt=0)
    #: Log lines as ``text`` (people) or ``json`` (log collectors), at ``log_level`` or
    #: above (``python -m ledger.wallet``; ``notary up`` takes the command line's).
    log_format: LogFormat = "text"
    log_level: str = "info"

    @property
    def db_path(self) -> Path:
        """The SQLite wallet file."""
        return self.wallet_file if self.wallet_file is not None else self.data_dir / "wallet.sqlite"
