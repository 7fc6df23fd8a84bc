"""The keyring: deterministic generation, imports, lock state, secrets at rest."""

from __future__ import annotations

from pathlib import Path

import nacl.pwhash
import pytest

from ledger.core.clock import ManualClock
from ledger.core.errors import AddressError
from ledger.wallet.errors import (
    IncorrectPassphraseError,
    UnknownKeyError,
    WalletLockedError,
    WalletNotEncryptedError,
    WalletStateError,
)
from ledger.wallet.hdkeys import bip39_seed, derive_wallet_key
from ledger.wallet.keyring import Keyring, import_secrets, initialize_store
from ledger.wallet.store import MemoryWalletStore, SqliteWalletStore

YELLOW = " ".join(["yellow"] * 12)
FAST = {
    "kdf_opslimit": nacl.pwhash.argon2id.OPSLIMIT_MIN,
    "kdf_memlimit_bytes": nacl.pwhash.argon2id.MEMLIMIT_MIN,
}
ZERO_ES = "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"
ZERO_EC = "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"
SAND_FS = "Fs3E9gV6DXsYzf7Fqx1fVBQPQXV695eP3k5XbmHEZVRLkMdD9qCK"
SAND_FA = "FA2jK2HcLnRdS94dEcU27rF3meoJfpUcZPSinpb7AwQvPRY6RL1Q"


def _plain(clock: ManualClock | None = None) -> Keyring:
    store = MemoryWalletStore()
    initialize_store(store, mnemonic=YELLOW)
    return Keyring(store, clock=clock or ManualClock())


def _encrypted(store=None, clock: ManualClock | None = None) -> Keyring:  # type: ignore[no-untyped-def]
    store = store if store is not None else MemoryWalletStore()
    initialize_store(store, mnemonic=YELLOW, passphrase="pw", **FAST)
    return Keyring(store, clock=clock or ManualClock(1000.0))


def test_generation_follows_the_bip44_counters() -> None:
    keyring = _plain()
    assert keyring.generate("fct").public == "FA22de5NSG2FA2HmMaD4h8qSAZAJyztmmnwgLPghCQKoSekwYYct"
    assert keyring.generate("ec").public == "EC2KnJQN86MYq4pQyeSGTHSiVdkhRCPXS3udzD4im6BXRBjZFMmR"
    assert keyring.generate("fct").public == "FA3heCmxKCk1tCCfiAMDmX8Ctg6XTQjRRaJrF5Jagc9rbo7wqQLV"
    assert keyring.generate("identity").public.startswith("idpub2Q7m3Ywk")


def test_counters_survive_reopening_and_skip_imported_keys(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    store = SqliteWalletStore(path)
    initialize_store(store, mnemonic=YELLOW)
    keyring = Keyring(store, clock=ManualClock())
    index1 = derive_wallet_key(bip39_seed(YELLOW), "fct", 1)
    from ledger.core.addresses import fct_secret_address

    keyring.import_secret(fct_secret_address(index1))  # index 1 already held
    first = keyring.generate("fct")
    store.close()
    reopened = Keyring(SqliteWalletStore(path), clock=ManualClock())
    third = reopened.generate("fct")
    assert first.public == "FA22de5NSG2FA2HmMaD4h8qSAZAJyztmmnwgLPghCQKoSekwYYct"
    assert third.public != "FA3heCmxKCk1tCCfiAMDmX8Ctg6XTQjRRaJrF5Jagc9rbo7wqQLV"
    assert third.secret == fct_secret_address(derive_wallet_key(bip39_seed(YELLOW), "fct", 2))
    assert [p.public for p in reopened.list()][:2] == [
        "FA3heCmxKCk1tCCfiAMDmX8Ctg6XTQjRRaJrF5Jagc9rbo7wqQLV",
        first.public,
    ]


def test_import_is_idempotent_and_checks_kinds() -> None:
    keyring = _plain()
    assert keyring.import_secret(ZERO_ES).public == ZERO_EC
    assert keyring.import_secret(ZERO_ES).public == ZERO_EC
    assert keyring.import_secret(SAND_FS).public == SAND_FA
    assert [p.public for p in keyring.list()] == [SAND_FA, ZERO_EC]
    with pytest.raises(AddressError) as info:
        keyring.import_secret("Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eX")
    assert "Es2Rf7" not in str(info.value)
    with pytest.raises(AddressError):
        keyring.import_secret("idsec2VZ2EJ1hoUeQYmFPeFthWts3xsGiPpRdfL4zABjzuHQshX4qvY")
    with pytest.raises(AddressError):
        keyring.import_secret(ZERO_EC)  # a public address is not a secret


def test_get_remove_and_signing_key_cache() -> None:
    keyring = _plain()
    keyring.import_secret(ZERO_ES)
    key = keyring.signing_key(ZERO_EC)
    assert key.seed == bytes(32)
    assert keyring.signing_key(ZERO_EC) is key
    assert keyring.get(ZERO_EC).secret == ZERO_ES
    with pytest.raises(UnknownKeyError):
        keyring.signing_key(ZERO_EC, kinds=("identity",))
    keyring.remove(ZERO_EC)
    with pytest.raises(UnknownKeyError):
        keyring.signing_key(ZERO_EC)
    with pytest.raises(UnknownKeyError):
        keyring.remove(ZERO_EC)


def test_plain_wallet_is_always_unlocked_and_refuses_unlock() -> None:
    keyring = _plain()
    assert not keyring.encrypted and not keyring.is_locked()
    with pytest.raises(WalletNotEncryptedError):
        keyring.unlock("pw", 10)


def test_encrypted_wallet_lock_cycle() -> None:
    clock = ManualClock(1000.0)
    keyring = _encrypted(clock=clock)
    assert keyring.encrypted and keyring.is_locked()
    for call in (lambda: keyring.generate("ec"), keyring.mnemonic, keyring.list):
        with pytest.raises(WalletLockedError):
            call()
    with pytest.raises(IncorrectPassphraseError):
        keyring.unlock("wrong", 10)
    assert keyring.unlock("pw", 10) == 1010.0
    pair = keyring.generate("ec")
    assert pair.public == "EC2KnJQN86MYq4pQyeSGTHSiVdkhRCPXS3udzD4im6BXRBjZFMmR"
    assert keyring.mnemonic() == YELLOW
    clock.advance(9.5)
    assert keyring.signing_key(pair.public).public_key
    clock.advance(0.5)
    with pytest.raises(WalletLockedError):
        keyring.signing_key(pair.public)
    assert keyring.unlocked_until == 0.0


def test_unlock_timeout_is_capped() -> None:
    store = MemoryWalletStore()
    initialize_store(store, passphrase="pw", **FAST)
    keyring = Keyring(store, clock=ManualClock(0.0), max_unlock_s=100)
    assert keyring.unlock("pw", 10**12) == 100.0
    keyring.lock()
    assert keyring.is_locked()


def test_no_secret_is_stored_in_clear(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    store = SqliteWalletStore(path)
    keyring = _encrypted(store)
    keyring.unlock("pw", 60)
    generated = keyring.generate("ec")
    keyring.import_secret(SAND_FS)
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    sand_seed = bytes.fromhex("fb3b471b1dcdadfeb856bd0b02d8bf49ace0edd372a3d9f2a95b78ec12a324d6")
    ec_seed = derive_wallet_key(bip39_seed(YELLOW), "ec", 0)
    for secret in (b"yellow", sand_seed, ec_seed, SAND_FS.encode(), generated.secret.encode()):
        assert secret not in raw
    assert generated.public.encode() in raw  # public strings stay readable


def test_secrets_are_not_in_reprs() -> None:
    keyring = _plain()
    pair = keyring.import_secret(ZERO_ES)
    assert ZERO_ES not in repr(pair) and ZERO_ES not in repr(keyring)
    assert "00" * 32 not in repr(keyring.signing_key(ZERO_EC))


def test_uninitialized_store_is_refused_and_initialize_once() -> None:
    store = MemoryWalletStore()
    with pytest.raises(WalletStateError):
        Keyring(store, clock=ManualClock())
    assert initialize_store(store)
    assert not initialize_store(store, mnemonic=YELLOW)
    assert Keyring(store, clock=ManualClock()).mnemonic() != YELLOW


def test_import_secrets_helper_for_the_dev_stack() -> None:
    store = MemoryWalletStore()
    initialize_store(store, passphrase="pw", **FAST)
    assert import_secrets(store, [ZERO_ES, SAND_FS], passphrase="pw") == [ZERO_EC, SAND_FA]
    keyring = Keyring(store, clock=ManualClock())
    keyring.unlock("pw", 5)
    assert [p.public for p in keyring.list()] == [SAND_FA, ZERO_EC]
    with pytest.raises(WalletLockedError):
        import_secrets(store, [ZERO_ES])
    with pytest.raises(IncorrectPassphraseError):
        import_secrets(store, [ZERO_ES], passphrase="nope")
