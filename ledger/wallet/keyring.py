"""The keyring: the wallet's seed, addresses and identity keys, with lock state.

A ``Keyring`` reads its store once when opened and then serves every read from memory:
public strings and sealed secrets are indexed by public string, and opened
``SigningKey`` objects are cached per address, so ``compose-*`` calls never touch the
database. Writes (generate, import, remove) go to the store first, then to the index.

An encrypted keyring starts locked. ``unlock(passphrase, timeout_s)`` keeps the derived
SecretBox key in memory until ``clock.now() + timeout_s``; after that every call that
needs a secret raises ``WalletLockedError`` and the caches of opened secrets are dropped.
Secrets never appear in ``repr`` or in error messages.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from ledger.core.addresses import (
    address_kind,
    ec_public_address,
    ec_secret_address,
    fct_address_from_public_key,
    fct_secret_address,
    identity_public_key,
    identity_secret_key,
    seed_from_ec_secret,
    seed_from_fct_secret,
    seed_from_identity_secret,
)
from ledger.core.clock import Clock, SystemClock
from ledger.core.errors import AddressError
from ledger.core.keys import SigningKey
from ledger.wallet.errors import (
    UnknownKeyError,
    WalletLockedError,
    WalletNotEncryptedError,
    WalletStateError,
)
from ledger.wallet.hdkeys import (
    KeyKind,
    bip39_seed,
    derive_wallet_key,
    koinify_key,
    new_mnemonic,
    normalize_mnemonic,
)
from ledger.wallet.sealing import (
    DEFAULT_MEMLIMIT_BYTES,
    DEFAULT_OPSLIMIT,
    VERIFIER_PLAINTEXT,
    BoxSealer,
    KdfParams,
    PlainSealer,
    Sealer,
    open_verified,
)
from ledger.wallet.store import StoredKey, WalletStore

__all__ = [
    "ADDRESS_KINDS",
    "FORMAT_VERSION",
    "KeyPair",
    "Keyring",
    "MAX_UNLOCK_S",
    "import_secrets",
    "initialize_store",
    "key_pair",
    "public_kind",
]

FORMAT_VERSION = b"1"
MAX_UNLOCK_S = 2**30  # walletd caps unlock timeouts at 2^30 seconds
ADDRESS_KINDS: frozenset[KeyKind] = frozenset({"fct", "ec"})
_EC_ONLY: frozenset[KeyKind] = frozenset({"ec"})
_SECRET_KINDS: dict[str, KeyKind] = {"Fs": "fct", "Es": "ec", "idsec": "identity"}
_PUBLIC_KINDS: dict[str, KeyKind] = {"FA": "fct", "EC": "ec", "idpub": "identity"}
_SEED_FROM_SECRET = {
    "fct": seed_from_fct_secret,
    "ec": seed_from_ec_secret,
    "identity": seed_from_identity_secret,
}
_SECRET_FROM_SEED = {
    "fct": fct_secret_address,
    "ec": ec_secret_address,
    "identity": identity_secret_key,
}
_PUBLIC_FROM_KEY = {
    "fct": fct_address_from_public_key,
    "ec": ec_public_address,
    "identity": identity_public_key,
}


@dataclass(frozen=True)
class KeyPair:
    """A public string and its secret string (``FA``/``Fs``, ``EC``/``Es``, ``idpub``/``idsec``).

    ``repr`` shows only the public part.
    """

    public: str
    secret: str = field(repr=False)

    def to_json(self) -> dict[str, str]:
        """``{"public": ..., "secret": ...}`` as walletd returns it."""
        return {"public": self.public, "secret": self.secret}


def key_pair(kind: KeyKind, seed32: bytes) -> KeyPair:
    """Public and secret strings of the ed25519 ``seed32`` for a key kind."""
    public_key = SigningKey.from_seed(seed32).public_key
    return KeyPair(_PUBLIC_FROM_KEY[kind](public_key), _SECRET_FROM_SEED[kind](seed32))


def public_kind(public: str) -> KeyKind:
    """Kind of a public string (FA/EC/idpub); AddressError for anything else."""
    kind = _PUBLIC_KINDS.get(address_kind(public))
    if kind is None:
        raise AddressError("not a public address or identity key")
    return kind


def initialize_store(
    store: WalletStore,
    *,
    mnemonic: str | None = None,
    passphrase: str | None = None,
    kdf_opslimit: int = DEFAULT_OPSLIMIT,
    kdf_memlimit_bytes: int = DEFAULT_MEMLIMIT_BYTES,
) -> bool:
    """Give an empty store a seed (new 12-word mnemonic unless given) and its encryption.

    With ``passphrase`` the wallet is encrypted (argon2id + SecretBox); without, it is not.
    Returns False and changes nothing if the store already holds a wallet.

    Raises:
        InvalidMnemonicError: ``mnemonic`` given but not valid.
    """
    if store.get_meta("format") is not None:
        return False
    words = normalize_mnemonic(mnemonic) if mnemonic is not None else new_mnemonic()
    meta: dict[str, bytes] = {"encryption": b"none"}
    sealer: Sealer = PlainSealer()
    if passphrase is not None:
        params = KdfParams.fresh(opslimit=kdf_opslimit, memlimit_bytes=kdf_memlimit_bytes)
        sealer = BoxSealer(params.derive_key(passphrase))
        meta = {"encryption": params.to_bytes(), "verifier": sealer.seal(VERIFIER_PLAINTEXT)}
    meta["mnemonic"] = sealer.seal(words.encode())
    meta["format"] = FORMAT_VERSION
    store.put_meta(meta)
    return True


class Keyring:
    """Keys of one wallet store; thread-safe. Build with ``Keyring(store, clock=...)``.

    Raises (on construction):
        WalletStateError: the store was never initialized or has an unknown format.
    """

    def __init__(self, store: WalletStore, *, clock: Clock, max_unlock_s: int = MAX_UNLOCK_S):
        if store.get_meta("format") != FORMAT_VERSION:
            raise WalletStateError("wallet store is not initialized (or has an unknown format)")
        self._store = store
        self._clock = clock
        self._max_unlock_s = max_unlock_s
        self._lock = threading.RLock()
        encryption = store.get_meta("encryption")
        self._params = None if encryption == b"none" else KdfParams.from_bytes(encryption or b"")
        self._verifier = store.get_meta("verifier")
        self._sealer: Sealer | None = PlainSealer() if self._params is None else None
        self._unlocked_until = 0.0
        self._index: dict[str, StoredKey] = {k.public: k for k in store.list_keys()}
        self._signing: dict[str, SigningKey] = {}
        self._bip39: bytes | None = None

    def __repr__(self) -> str:
        state = "encrypted" if self.encrypted else "plain"
        return f"Keyring({state}, keys={len(self._index)})"

    # -- lock state -------------------------------------------------------------------------

    @property
    def encrypted(self) -> bool:
        """True when secrets are stored encrypted under a passphrase."""
        return self._params is not None

    @property
    def unlocked_until(self) -> float:
        """Unix seconds until which an encrypted wallet stays unlocked (0 when locked)."""
        return self._unlocked_until

    def is_locked(self) -> bool:
        """True when a secret cannot be read right now."""
        with self._lock:
            return self._current_sealer() is None

    def require_unlocked(self) -> None:
        """Raise WalletLockedError unless secrets can be read now."""
        self._sealer_or_raise()

    def unlock(self, passphrase: str, timeout_s: float) -> float:
        """Unlock for ``timeout_s`` seconds (capped at 2^30); returns the Unix end time.

        Raises:
            WalletNotEncryptedError: the wallet has no passphrase.
            IncorrectPassphraseError: the passphrase is wrong.
        """
        if self._params is None or self._verifier is None:
            raise WalletNotEncryptedError()
        sealer = open_verified(self._params, passphrase, self._verifier)
        timeout_s = min(max(float(timeout_s), 0.0), float(self._max_unlock_s))
        with self._lock:
            self._sealer = sealer
            self._unlocked_until = self._clock.now() + timeout_s
            return self._unlocked_until

    def lock(self) -> None:
        """Forget the passphrase key and every opened secret (no-op if not encrypted)."""
        with self._lock:
            if self._params is not None:
                self._forget()

    # -- reading ----------------------------------------------------------------------------

    def get(self, public: str, *, kinds: Collection[KeyKind] = ADDRESS_KINDS) -> KeyPair:
        """Public and secret strings of a held key. UnknownKeyError if not held."""
        with self._lock:
            sealer = self._sealer_or_raise()
            record = self._record(public, kinds)
            return key_pair(record.kind, sealer.open(record.sealed_secret))

    def require_key(self, public: str, *, kinds: Collection[KeyKind] = ADDRESS_KINDS) -> None:
        """Return if ``public`` is held (as one of ``kinds``), without opening its secret.

        Raises:
            UnknownKeyError: not held. WalletLockedError: the wallet is locked.
        """
        with self._lock:
            self._sealer_or_raise()
            self._record(public, kinds)

    def publics(self, kinds: Collection[KeyKind] = ADDRESS_KINDS) -> list[str]:
        """Public strings of every held key of ``kinds`` (order of ``list``); secrets stay
        sealed. WalletLockedError when locked (walletd answers nothing while locked)."""
        with self._lock:
            self._sealer_or_raise()
            ordered = sorted(
                (r for r in self._index.values() if r.kind in kinds),
                key=lambda r: ("fct", "ec", "identity").index(r.kind),
            )
            return [r.public for r in ordered]

    def list(self, kinds: Collection[KeyKind] = ADDRESS_KINDS) -> list[KeyPair]:
        """Every held key of ``kinds``: coin addresses first, then EC, then identity keys."""
        with self._lock:
            sealer = self._sealer_or_raise()
            ordered = sorted(
                (r for r in self._index.values() if r.kind in kinds),
                key=lambda r: ("fct", "ec", "identity").index(r.kind),
            )
            return [key_pair(r.kind, sealer.open(r.sealed_secret)) for r in ordered]

    def signing_key(self, public: str, *, kinds: Collection[KeyKind] = _EC_ONLY) -> SigningKey:
        """The private key of a held key (cached while unlocked). UnknownKeyError if not held."""
        with self._lock:
            sealer = self._sealer_or_raise()
            record = self._record(public, kinds)
            cached = self._signing.get(public)
            if cached is not None:
                return cached
            key = SigningKey.from_seed(sealer.open(record.sealed_secret))
            self._signing[public] = key
            return key

    def mnemonic(self) -> str:
        """The wallet seed as 12 words (``wallet-backup``)."""
        with self._lock:
            return self._open_mnemonic(self._sealer_or_raise())

    def seal_record(self, plaintext: bytes) -> bytes:
        """Seal wallet data other than keys (named transactions) like a secret.

        Encrypted wallet: SecretBox under the passphrase key; plain wallet: unchanged.
        Raises WalletLockedError when locked.
        """
        with self._lock:
            return self._sealer_or_raise().seal(plaintext)

    def open_record(self, sealed: bytes) -> bytes:
        """Inverse of ``seal_record``. WalletLockedError when locked;
        IncorrectPassphraseError when the record does not authenticate (damaged file)."""
        with self._lock:
            return self._sealer_or_raise().open(sealed)

    # -- writing ----------------------------------------------------------------------------

    def generate(self, kind: KeyKind) -> KeyPair:
        """Derive, store and return the next key of ``kind`` from the wallet seed (3.3)."""
        with self._lock:
            sealer = self._sealer_or_raise()
            seed = self._bip39_seed(sealer)
            index = int(self._store.get_meta(f"counter:{kind}") or b"0")
            while True:
                seed32 = derive_wallet_key(seed, kind, index)
                pair = key_pair(kind, seed32)
                record = StoredKey(kind, pair.public, sealer.seal(seed32), index)
                index += 1
                if self._add(record, meta={f"counter:{kind}": str(index).encode()}):
                    return pair

    def import_secret(self, secret: str, *, kinds: Collection[KeyKind] = ADDRESS_KINDS) -> KeyPair:
        """Store a secret string (``Fs``/``Es``/``idsec`` as allowed by ``kinds``).

        Importing a key already held is a no-op that returns it.

        Raises:
            AddressError: not a valid secret string of an allowed kind (secret not echoed).
            WalletLockedError: the wallet is locked.
        """
        kind = self.check_secret(secret, kinds=kinds)
        return self._import_seed(kind, _SEED_FROM_SECRET[kind](secret))

    @staticmethod
    def check_secret(secret: str, *, kinds: Collection[KeyKind] = ADDRESS_KINDS) -> KeyKind:
        """Kind of a secret string of an allowed kind; AddressError (secret not echoed)."""
        try:
            kind = _SECRET_KINDS.get(address_kind(secret))
        except AddressError:
            raise AddressError("not a valid secret key string") from None  # never echo it
        if kind is None or kind not in kinds:
            raise AddressError("secret key string of the wrong kind")
        return kind

    def import_koinify(self, words: str) -> KeyPair:
        """Store the coin address of Koinify sale words (``m/7'``). InvalidMnemonicError."""
        return self._import_seed("fct", koinify_key(words))

    def remove(self, public: str, *, kinds: Collection[KeyKind] = ADDRESS_KINDS) -> None:
        """Delete a held key. UnknownKeyError if not held; WalletLockedError when locked."""
        with self._lock:
            self._sealer_or_raise()
            self._record(public, kinds)
            self._store.remove_key(public)
            self._index.pop(public, None)
            self._signing.pop(public, None)

    # -- internals --------------------------------------------------------------------------

    def _import_seed(self, kind: KeyKind, seed32: bytes) -> KeyPair:
        with self._lock:
            sealer = self._sealer_or_raise()
            pair = key_pair(kind, seed32)
            if pair.public not in self._index:
                self._add(StoredKey(kind, pair.public, sealer.seal(seed32), None))
            return pair

    def _add(self, record: StoredKey, *, meta: dict[str, bytes] | None = None) -> bool:
        inserted = self._store.add_key(record, meta=meta)
        if inserted:
            self._index[record.public] = record
        return inserted

    def _record(self, public: str, kinds: Collection[KeyKind]) -> StoredKey:
        record = self._index.get(public)
        if record is None or record.kind not in kinds:
            what = "identity key" if set(kinds) == {"identity"} else "address"
            raise UnknownKeyError(public, what=what)
        return record

    def _bip39_seed(self, sealer: Sealer) -> bytes:
        if self._bip39 is None:
            self._bip39 = bip39_seed(self._open_mnemonic(sealer))
        return self._bip39

    def _open_mnemonic(self, sealer: Sealer) -> str:
        sealed = self._store.get_meta("mnemonic")
        if sealed is None:
            raise WalletStateError("wallet store holds no seed")
        return sealer.open(sealed).decode()

    def _current_sealer(self) -> Sealer | None:
        if self._params is None:
            return self._sealer
        if self._sealer is not None and self._clock.now() >= self._unlocked_until:
            self._forget()
        return self._sealer

    def _sealer_or_raise(self) -> Sealer:
        with self._lock:
            sealer = self._current_sealer()
            if sealer is None:
                raise WalletLockedError()
            return sealer

    def _forget(self) -> None:
        self._sealer = None
        self._unlocked_until = 0.0
        self._signing.clear()
        self._bip39 = None


def import_secrets(
    store: WalletStore,
    secrets: Iterable[str],
    *,
    passphrase: str | None = None,
    clock: Clock | None = None,
) -> list[str]:
    """Import ``Fs``/``Es``/``idsec`` strings into an initialized store; returns the publics.

    For the development stack (e.g. the well-known zero-seed EC key). An encrypted store
    needs its ``passphrase``. Keys already present are left as they are. Call it before
    ``create_app`` opens the same store (a running keyring does not see later imports).

    Raises:
        WalletStateError: store not initialized. AddressError: a string is not a secret.
        IncorrectPassphraseError / WalletLockedError: encrypted store, wrong or no passphrase.
    """
    keyring = Keyring(store, clock=clock or SystemClock())
    if keyring.encrypted and passphrase is not None:
        keyring.unlock(passphrase, 60)
    kinds: frozenset[KeyKind] = frozenset({"fct", "ec", "identity"})
    publics = [keyring.import_secret(s, kinds=kinds).public for s in secrets]
    keyring.lock()
    return publics
