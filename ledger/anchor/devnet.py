"""Well-known keys of the development network's anchoring (public test values).

The development anchor key signs anchor records (formats 7.4); a development node trusts
its public key unless another key is configured. Like ``ledger.devnet``'s keys, it is
derived from a public string: never use it where an anchor record must be trusted.
"""

from __future__ import annotations

from ledger.core.hashing import sha256
from ledger.core.keys import SigningKey

#: 32-byte ed25519 seed of the development anchor key (hex).
DEV_ANCHOR_SEED_HEX = sha256(b"notary development anchor key").hex()
#: Its public key (raw 32 bytes): the trusted anchor key of a development node.
DEV_ANCHOR_PUBLIC_KEY = SigningKey.from_seed(bytes.fromhex(DEV_ANCHOR_SEED_HEX)).public_key
#: The window contract's 20-byte address on the development network (hex, ``0x``).
DEV_CONTRACT_ADDRESS = "0x" + sha256(b"notary development window contract")[:20].hex()
