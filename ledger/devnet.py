"""Every constant of the bundled development network, in one place (public test values).

Nothing here is secret and nothing here may protect anything of value: every key is
derived from a public string or copied from public Factom test material.

- Coins and entry credits: the development genesis funds the coin address of
  ``DEV_FCT_SECRET`` (factomd's "sand" key) and buys entry credits for the EC address of
  ``DEV_EC_SECRET`` (the all-zero seed), so a fresh bundled stack can publish at once.
- Anchoring: the development anchor key signs anchor records; a development node trusts
  its public key unless another key is configured. The window contract has a made-up
  20-byte address.
- The bundled proof-of-work chain: its name, difficulty and confirmation depth are the
  anchoring service's defaults and the verifier's ``devnet`` trust policy
  (``ledger.core.proof.policy.DEVNET``); they are defined with the chain's parameters
  (``ledger.core.pow.params``, which imports nothing outside ``ledger.core``) and listed
  here with the rest.

Derived values are written out rather than computed, so that this module imports nothing
but those parameters; ``tests/ledger/test_devnet.py`` derives them again.
"""

from __future__ import annotations

from ledger.core.pow.params import (
    DEV_POW_CHAIN_NAME,
    DEV_POW_CONFIRMATIONS,
    DEV_POW_DIFFICULTY_BITS,
)

__all__ = [
    "DEV_ANCHOR_PUBLIC_KEY",
    "DEV_ANCHOR_SEED_HEX",
    "DEV_CONTRACT_ADDRESS",
    "DEV_EC_ADDRESS",
    "DEV_EC_SECRET",
    "DEV_FCT_ADDRESS",
    "DEV_FCT_SECRET",
    "DEV_GENESIS_COINS",
    "DEV_GENESIS_CREDITS",
    "DEV_POW_CHAIN_NAME",
    "DEV_POW_CONFIRMATIONS",
    "DEV_POW_DIFFICULTY_BITS",
]

DEV_FCT_SECRET = "Fs3E9gV6DXsYzf7Fqx1fVBQPQXV695eP3k5XbmHEZVRLkMdD9qCK"
DEV_FCT_ADDRESS = "FA2jK2HcLnRdS94dEcU27rF3meoJfpUcZPSinpb7AwQvPRY6RL1Q"
DEV_EC_SECRET = "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"
DEV_EC_ADDRESS = "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"

#: Coins (minor units) the genesis coinbase pays to ``DEV_FCT_ADDRESS``: 10 million coins.
DEV_GENESIS_COINS = 10_000_000 * 10**8
#: Entry credits the genesis buys for ``DEV_EC_ADDRESS``.
DEV_GENESIS_CREDITS = 1_000_000_000

#: 32-byte ed25519 seed of the development anchor key (hex):
#: SHA-256 of ``b"notary development anchor key"``.
DEV_ANCHOR_SEED_HEX = "0558678f8bcdeed4ffa1aec458463355214ebff9f67a32305b7532b64862405e"
#: Its public key (raw 32 bytes): the trusted anchor key of a development node.
DEV_ANCHOR_PUBLIC_KEY = bytes.fromhex(
    "ad86a093972a18e9272de4df9650e9ce6b3cf35a977dd2cf8c5b94fe9df8661f"
)
#: The window contract's 20-byte address (hex with ``0x``): the first 20 bytes of
#: SHA-256 of ``b"notary development window contract"``.
DEV_CONTRACT_ADDRESS = "0xeacb8ccf032e8fe6a4e0957597f9b2722a1c4aa6"
