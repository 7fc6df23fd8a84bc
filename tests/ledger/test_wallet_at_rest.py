"""The bundled stack's wallet at rest: encrypted by default, plain only when asked, and an
existing plain wallet encrypted on request (``ledger.wallet_at_rest``)."""

from __future__ import annotations

import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest
from pydantic import SecretStr

from ledger.stack import Stack, StackSettings
from ledger.wallet.app import open_keyring
from ledger.wallet.encryption import encrypt_wallet_file, wallet_file_encrypted
from ledger.wallet.errors import WalletStateError
from ledger.wallet.store import SqliteWalletStore
from ledger.wallet_at_rest import WalletAtRestError

SEALED_SEED_BYTES = 24 + 32 + 16  # nonce, seed, Poly1305 tag


def _stack(data: Path, **fields: object) -> Stack:
    return Stack(StackSettings(data_dir=data, **fields))  # type: ignore[arg-type]


def _open_wallet(stack: Stack) -> list[str]:
    """Open the stack's wallet as its service does; the publics it holds."""
    settings = stack.wallet_settings()
    store = SqliteWalletStore(settings.db_path)
    try:
        from ledger.core.clock import SystemClock

        keyring = open_keyring(store, settings, clock=SystemClock())
        assert not keyring.is_locked()  # unlocked while serving: the API signs through it
        return sorted(k.public for k in keyring.list())
    finally:
        store.close()


def _sealed_secrets(wallet: Path) -> list[bytes]:
    with closing(sqlite3.connect(wallet)) as conn:
        return [bytes(r[0]) for r in conn.execute("SELECT sealed_secret FROM keys")]


def _file_bytes(wallet: Path) -> bytes:
    sides = [wallet, wallet.with_name(wallet.name + "-wal")]
    return b"".join(p.read_bytes() for p in sides if p.exists())


def test_a_new_stack_wallet_is_encrypted_under_a_generated_owner_only_passphrase(
    tmp_path: Path,
) -> None:
    stack = _stack(tmp_path / "data")
    stack.prepare()
    at_rest = stack.wallet_at_rest()
    passphrase = at_rest.generated_file
    assert stat.S_IMODE(passphrase.stat().st_mode) == 0o600
    assert len(passphrase.read_text().strip()) >= 43  # 32 random bytes
    publics = _open_wallet(stack)  # creates the wallet and imports the development keys
    assert wallet_file_encrypted(at_rest.wallet_file) is True
    assert len(publics) == 2
    assert {len(s) for s in _sealed_secrets(at_rest.wallet_file)} == {SEALED_SEED_BYTES}
    fields = stack.wallet_settings()
    assert fields.encrypted and fields.kdf_memlimit_bytes == 64 * 1024 * 1024  # interactive
    stack.prepare()  # the next start keeps the passphrase
    assert _open_wallet(stack) == publics


def test_a_chosen_passphrase_file_is_used_with_the_moderate_cost(tmp_path: Path) -> None:
    secret = tmp_path / "pass"
    secret.write_text("correct horse battery staple\n")
    stack = _stack(tmp_path / "data", wallet_passphrase_file=secret)
    stack.prepare()
    assert not stack.wallet_at_rest().generated_file.exists()
    settings = stack.wallet_settings()
    assert settings.passphrase is not None
    assert settings.passphrase.get_secret_value() == "correct horse battery staple"
    assert settings.kdf_memlimit_bytes == 256 * 1024 * 1024


def test_the_passphrase_from_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTARY_STACK_WALLET_PASSPHRASE", "from the environment")
    stack = Stack(StackSettings(data_dir=tmp_path / "data"))
    stack.prepare()
    passphrase = stack.wallet_settings().passphrase
    assert passphrase is not None and passphrase.get_secret_value() == "from the environment"
    assert stack.wallet_at_rest().source() == "NOTARY_STACK_WALLET_PASSPHRASE"


def test_a_plain_wallet_only_when_asked_and_never_switched_silently(tmp_path: Path) -> None:
    data = tmp_path / "data"
    plain = _stack(data, wallet_plain=True)
    plain.prepare()
    publics = _open_wallet(plain)
    wallet = plain.wallet_at_rest().wallet_file
    assert wallet_file_encrypted(wallet) is False
    assert not plain.wallet_at_rest().generated_file.exists()
    seeds = _sealed_secrets(wallet)
    assert {len(s) for s in seeds} == {32}  # raw seeds: what encryption is for

    with pytest.raises(WalletAtRestError, match="notary wallet encrypt"):
        _stack(data).prepare()  # the default refuses it: no silent migration
    assert wallet_file_encrypted(wallet) is False

    assert _stack(data).wallet_at_rest().encrypt() == 3  # the mnemonic and two keys
    assert wallet_file_encrypted(wallet) is True
    on_disk = _file_bytes(wallet)
    # No clear seed left in the file's pages or its log (the development EC key's seed is
    # 32 zero bytes, found anywhere: the other one is the test).
    secret_seeds = [seed for seed in seeds if any(seed)]
    assert secret_seeds and all(seed not in on_disk for seed in secret_seeds)
    encrypted = _stack(data)
    encrypted.prepare()
    assert _open_wallet(encrypted) == publics  # the same keys, now sealed
    with pytest.raises(WalletAtRestError, match="start without --plain-wallet"):
        _stack(data, wallet_plain=True).prepare()


def test_encrypting_twice_or_nothing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WalletStateError, match="not a plain wallet"):
        encrypt_wallet_file(tmp_path / "none.sqlite", "p")
    stack = _stack(tmp_path / "data", wallet_passphrase=SecretStr("p"))
    stack.prepare()
    _open_wallet(stack)
    with pytest.raises(WalletAtRestError, match="not a plain wallet"):
        stack.wallet_at_rest().encrypt()


def test_an_encrypted_wallet_whose_passphrase_file_is_gone_is_refused(tmp_path: Path) -> None:
    stack = _stack(tmp_path / "data")
    stack.prepare()
    _open_wallet(stack)
    stack.wallet_at_rest().generated_file.unlink()
    with pytest.raises(WalletAtRestError, match="--wallet-passphrase-file"):
        stack.prepare()


def test_notary_wallet_encrypt_migrates_on_request_only(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.cli.exit_codes import ExitCode

    data = tmp_path / "data"
    plain = _stack(data, wallet_plain=True)
    plain.prepare()
    publics = _open_wallet(plain)
    runner = CliRunner()
    up = runner.invoke(app, ["up", "--data-dir", str(data), "--no-prefect"], env={"COLUMNS": "300"})
    assert up.exit_code == ExitCode.USAGE  # refused before serving: never silently migrated
    assert "is not encrypted: run `notary wallet encrypt`" in " ".join(up.output.split())
    done = runner.invoke(app, ["wallet", "encrypt", "--data-dir", str(data)])
    assert done.exit_code == ExitCode.OK, done.output
    assert "encrypted (3 secrets sealed); passphrase in" in done.output
    assert wallet_file_encrypted(plain.wallet_at_rest().wallet_file) is True
    assert _open_wallet(_stack(data)) == publics
    again = runner.invoke(app, ["wallet", "encrypt", "--data-dir", str(data)])
    assert again.exit_code == ExitCode.USAGE and "not a plain wallet" in again.output
