"""Well-known keys of the bundled development network.

These are public test keys (factom-formats 3.4): never use them for anything of value.
The development genesis funds the coin address of ``DEV_FCT_SECRET`` (factomd's "sand"
key) and buys entry credits for the EC address of ``DEV_EC_SECRET`` (the all-zero seed),
so a fresh bundled stack can publish at once.
"""

from __future__ import annotations

DEV_FCT_SECRET = "Fs3E9gV6DXsYzf7Fqx1fVBQPQXV695eP3k5XbmHEZVRLkMdD9qCK"
DEV_FCT_ADDRESS = "FA2jK2HcLnRdS94dEcU27rF3meoJfpUcZPSinpb7AwQvPRY6RL1Q"
DEV_EC_SECRET = "Es2Rf7iM6PdsqfYCo3D1tnAR65SkLENyWJG1deUzpRMQmbh9F3eG"
DEV_EC_ADDRESS = "EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"

#: Coins (minor units) the genesis coinbase pays to ``DEV_FCT_ADDRESS``: 10 million coins.
DEV_GENESIS_COINS = 10_000_000 * 10**8
#: Entry credits the genesis buys for ``DEV_EC_ADDRESS``.
DEV_GENESIS_CREDITS = 1_000_000_000
