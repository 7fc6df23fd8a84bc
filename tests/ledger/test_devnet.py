"""The development network's constants: derived values match their derivation, and the
module stays a leaf that every layer may import."""

from __future__ import annotations

import subprocess
import sys

from ledger import devnet
from ledger.core.addresses import public_address_for_secret, seed_from_ec_secret
from ledger.core.hashing import sha256
from ledger.core.keys import SigningKey
from ledger.core.pow.params import PowParams


def test_coin_and_credit_keys_match_their_addresses() -> None:
    assert public_address_for_secret(devnet.DEV_FCT_SECRET) == devnet.DEV_FCT_ADDRESS
    assert public_address_for_secret(devnet.DEV_EC_SECRET) == devnet.DEV_EC_ADDRESS
    assert seed_from_ec_secret(devnet.DEV_EC_SECRET) == bytes(32)


def test_anchor_key_and_contract_address_are_derived_from_public_strings() -> None:
    seed = sha256(b"notary development anchor key")
    assert seed.hex() == devnet.DEV_ANCHOR_SEED_HEX
    assert SigningKey.from_seed(seed).public_key == devnet.DEV_ANCHOR_PUBLIC_KEY
    contract = sha256(b"notary development window contract")[:20]
    assert "0x" + contract.hex() == devnet.DEV_CONTRACT_ADDRESS


def test_the_default_proof_policy_is_the_development_chain() -> None:
    assert PowParams() == PowParams(
        devnet.DEV_POW_CHAIN_NAME, devnet.DEV_POW_DIFFICULTY_BITS, devnet.DEV_POW_CONFIRMATIONS
    )


def test_devnet_imports_only_the_pure_core() -> None:
    """The development constants import no service: only ``ledger.core`` (its proof-of-work
    parameters), which in turn never imports ``ledger.devnet``."""
    code = (
        "import sys, ledger.devnet;"
        "bad=[m for m in sys.modules if m.startswith('ledger.') and m != 'ledger.devnet'"
        " and not m.startswith('ledger.core')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
