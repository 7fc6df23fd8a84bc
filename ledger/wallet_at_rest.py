"""The bundled stack's wallet at rest: encrypted by default, its passphrase, its migration.

The stack's wallet (``<data_dir>/wallet/wallet.sqlite``) is encrypted with argon2id +
SecretBox (``ledger.wallet.sealing``) unless ``plain`` is asked for explicitly
(docs/security.md). The passphrase comes from, first to last:

1. ``passphrase`` (``NOTARY_STACK_WALLET_PASSPHRASE``, the environment);
2. ``passphrase_file`` (``notary up --wallet-passphrase-file``): its text, stripped;
3. ``<data_dir>/wallet-passphrase`` (0600), generated at the first start (32 random bytes,
   URL-safe base64), like ``rpc-credentials``.

Key derivation cost: a generated passphrase carries 256 bits of entropy, so guessing it is
hopeless whatever the cost; it is derived with argon2id's *interactive* limits (2 passes,
64 MiB: about 0.25 s here), which keeps ``notary up``, ``make demo`` and the tests quick.
A passphrase the user chose gets the *moderate* limits (3 passes, 256 MiB: about 2 s),
since it may be guessable.

``settle`` runs at start (``Stack.prepare``) and refuses what would be silent: an existing
plain wallet without ``plain`` (migrate it with ``encrypt``: ``notary wallet encrypt``) and
an encrypted one with ``plain``. The wallet service is then started with the passphrase
and stays unlocked while it serves (``WalletSettings.unlocked_while_serving``): the
publishing API signs its entry credit payments through it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nacl.pwhash
from pydantic import SecretStr

from ledger.secret_file import write_secret_file
from ledger.wallet.encryption import encrypt_wallet_file, wallet_file_encrypted
from ledger.wallet.errors import WalletStateError

__all__ = ["WalletAtRest", "WalletAtRestError"]

_GENERATED_COST = (
    nacl.pwhash.argon2id.OPSLIMIT_INTERACTIVE,
    nacl.pwhash.argon2id.MEMLIMIT_INTERACTIVE,
)
_CHOSEN_COST = (nacl.pwhash.argon2id.OPSLIMIT_MODERATE, nacl.pwhash.argon2id.MEMLIMIT_MODERATE)


class WalletAtRestError(ValueError):
    """The wallet's encryption at rest cannot be settled as configured (the message says
    what to do). Attributes: ``wallet_file``."""

    def __init__(self, wallet_file: Path, message: str) -> None:
        super().__init__(message)
        self.wallet_file = wallet_file


@dataclass(frozen=True)
class WalletAtRest:
    """How the stack's wallet is kept at rest (module docstring).

    Attributes:
        data_dir: the stack's data folder.
        wallet_file: the wallet's SQLite file.
        plain: keep the wallet unencrypted (explicit choice).
        passphrase: the passphrase from the environment, if any.
        passphrase_file: a file holding it, if given.
    """

    data_dir: Path
    wallet_file: Path
    plain: bool = False
    passphrase: SecretStr | None = None
    passphrase_file: Path | None = None

    @property
    def generated_file(self) -> Path:
        """``<data_dir>/wallet-passphrase``: the generated passphrase (0600)."""
        return self.data_dir / "wallet-passphrase"

    @property
    def chosen(self) -> bool:
        """True when the passphrase is the user's (environment or ``passphrase_file``)."""
        return self.passphrase is not None or self.passphrase_file is not None

    def source(self) -> str:
        """Where the passphrase comes from, in words (for the start-up lines)."""
        if self.passphrase is not None:
            return "NOTARY_STACK_WALLET_PASSPHRASE"
        return str(self.passphrase_file or self.generated_file)

    def resolve(self) -> str | None:
        """The passphrase, None when plain or not generated yet.

        Raises:
            WalletAtRestError: ``passphrase_file`` cannot be read or is empty.
        """
        if self.plain:
            return None
        if self.passphrase is not None:
            return self.passphrase.get_secret_value()
        path = self.passphrase_file or self.generated_file
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            if self.passphrase_file is None:
                return None
            raise WalletAtRestError(self.wallet_file, f"no wallet passphrase file {path}") from None
        except OSError as exc:
            raise WalletAtRestError(self.wallet_file, f"cannot read {path}: {exc}") from exc
        if not text:
            raise WalletAtRestError(self.wallet_file, f"the wallet passphrase file {path} is empty")
        return text

    def settle(self) -> None:
        """Check the wallet file against the choice and generate the passphrase file when
        needed (module docstring).

        Raises:
            WalletAtRestError: a plain wallet without ``plain``, an encrypted one with it,
                or an unreadable passphrase file.
        """
        state = wallet_file_encrypted(self.wallet_file)
        if self.plain and state is True:
            raise WalletAtRestError(
                self.wallet_file,
                f"the wallet {self.wallet_file} is encrypted: start without --plain-wallet",
            )
        if not self.plain and state is False:
            raise WalletAtRestError(
                self.wallet_file,
                f"the wallet {self.wallet_file} is not encrypted: run `notary wallet encrypt` "
                "to encrypt it (its keys are kept), or start with --plain-wallet to keep it "
                "plain",
            )
        if not self.plain and not self.chosen and not self.generated_file.exists():
            if state is True:
                raise WalletAtRestError(
                    self.wallet_file,
                    f"the wallet {self.wallet_file} is encrypted but {self.generated_file} is "
                    "missing: give its passphrase with --wallet-passphrase-file",
                )
            write_secret_file(self.generated_file, secrets.token_urlsafe(32).encode("ascii"))

    def wallet_fields(self) -> dict[str, Any]:
        """The ``WalletSettings`` fields of this choice (``encrypted``, ``passphrase``,
        the KDF cost, ``unlocked_while_serving``). Not plain and no passphrase yet
        (``settle`` not run): encrypted without passphrase, which the wallet refuses.

        Raises:
            WalletAtRestError: as ``resolve``.
        """
        if self.plain:
            return {"encrypted": False}
        passphrase = self.resolve()
        if passphrase is None:  # not settled: the wallet refuses to start without one
            return {"encrypted": True, "unlocked_while_serving": True}
        opslimit, memlimit = _CHOSEN_COST if self.chosen else _GENERATED_COST
        return {
            "encrypted": True,
            "passphrase": SecretStr(passphrase),
            "kdf_opslimit": opslimit,
            "kdf_memlimit_bytes": memlimit,
            "unlocked_while_serving": True,
        }

    def encrypt(self) -> int:
        """Encrypt an existing plain wallet (``notary wallet encrypt``), generating the
        passphrase file first unless one is chosen; returns the values sealed again.

        Raises:
            WalletAtRestError: ``plain`` is set, the file is not a plain wallet, or it is
                in use (the wallet is running).
        """
        if self.plain:
            raise WalletAtRestError(self.wallet_file, "--plain-wallet and encrypt contradict")
        if not self.chosen and not self.generated_file.exists():
            write_secret_file(self.generated_file, secrets.token_urlsafe(32).encode("ascii"))
        passphrase = self.resolve()
        assert passphrase is not None  # not plain, and the file exists now
        opslimit, memlimit = _CHOSEN_COST if self.chosen else _GENERATED_COST
        try:
            return encrypt_wallet_file(
                self.wallet_file, passphrase, opslimit=opslimit, memlimit_bytes=memlimit
            )
        except WalletStateError as exc:
            raise WalletAtRestError(self.wallet_file, str(exc)) from exc
