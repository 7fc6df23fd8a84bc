"""Trust policies: which anchor chain a verifier accepts, and how much of it.

A proof bundle's anchor is only as good as the chain it sits in. The verifier never picks
one by itself (as sigstore's ``Verifier.production()``): the caller passes a
``TrustPolicy`` and every verdict names it. A policy states

- the chain, by its genesis block hash (display hex, as Bitcoin software shows hashes) and
  the name bundles carry in ``anchor.chain`` (the policy's ``chain``; a bundle may also
  name the chain by that genesis hash);
- the proof-of-work function (``ledger.core.pow.work``: SHA256d for Bitcoin, scrypt
  N=1024, r=1, p=1 for Litecoin);
- the least work every header must carry, as a *maximum target*;
- the confirmations required (headers from the anchor's block on, that block included);
- whether a window anchor (the bundle's ``contract``) is required;
- whether the chain is independent evidence (``independent``), and the number of headers
  whose median time bounds the anchor's date (``median_time_span``; Bitcoin's median time
  past is over 11 blocks);
- optionally, shipped checkpoints (``ledger.core.proof.checkpoints``: bitcoin-mainnet has
  bitcoinj's, one header per difficulty period) that place a historic header, such as
  the one an OpenTimestamps proof attests, by its period's ``bits``
  (``TrustPolicy.place``). Chain anchors are checked against the least work alone.

Shipped (``SHIPPED``; ``policy_named``), genesis hashes and proof-of-work limits from
Bitcoin Core's ``src/kernel/chainparams.cpp`` and Litecoin Core's ``src/chainparams.cpp``
(``consensus.hashGenesisBlock``, ``consensus.powLimit``):

==================  ===========================================================  =====
name                least work per header                                        conf.
==================  ===========================================================  =====
bitcoin-mainnet     a quarter of block 840,000's work (bits 0x17034219)          6
bitcoin-testnet     powLimit (testnet3 allows minimum-difficulty blocks)         6
bitcoin-signet      powLimit 0x00000377ae00...                                   6
bitcoin-regtest     powLimit 0x7fffff... (no work)                               1
litecoin-mainnet    difficulty 2**22 (about 4.2 million; powLimit is 0x00000fff...) 6
litecoin-regtest    powLimit 0x7fffff... (no work)                               1
devnet              the bundled chain's 16 bits (``ledger.core.pow.params``)     2
==================  ===========================================================  =====

The mainnet floors are policy, not consensus: consensus only demands powLimit, which a
forger meets in seconds; a header below the floor is not a recent block of that chain.
Testnet, signet, regtest and the bundled chain are not independent evidence: anyone can
mine their headers (or, signet, their block signatures are not checked here); on
regtest and the bundled chain the confirmations are the operator's own. A policy file
(``TrustPolicy.from_json``) states other values; docs/proof-bundle.md shows the form.

Pure: no I/O (the CLI reads policy files).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import DecodeError, LedgerFormatError
from ledger.core.hexbytes import from_hex
from ledger.core.pow.header import BlockHeader, bits_to_target
from ledger.core.pow.params import PowParams
from ledger.core.pow.work import PowFunction
from ledger.core.proof.checkpoints import (
    BITCOIN_MAINNET_CHECKPOINTS,
    Checkpoints,
    Placement,
    bitcoin_mainnet_checkpoints,
)

__all__ = [
    "DEVNET",
    "SHIPPED",
    "PolicyError",
    "TrustPolicy",
    "policy_for_chain",
    "policy_named",
]

_POLICY_KEYS = frozenset(
    {
        "name",
        "chain",
        "genesis",
        "pow",
        "max_target",
        "confirmations",
        "require_window",
        "independent",
        "median_time_span",
        "note",
        "checkpoints",
    }
)


class PolicyError(LedgerFormatError):
    """A policy name that is not shipped, or a policy file that is not a valid policy."""


@dataclass(frozen=True)
class TrustPolicy:
    """One trust policy (module docstring).

    Attributes:
        name: the policy's name, printed in every verdict (``bitcoin-mainnet``).
        chain: the chain name bundles write in ``anchor.chain``.
        genesis_hash: the genesis block hash, raw 32 bytes in internal order; None for a
            chain every operator starts anew (the bundled chain).
        pow_function: the proof-of-work hash (``PowFunction``).
        max_target: the easiest target a header may have (its least work), 1..2**256-1.
        confirmations: headers needed from the anchor's block on (that block counts), >= 1.
        require_window: refuse a bundle without a window anchor (``contract``).
        independent: False when the chain is no evidence against its own operator (or
            anyone else who mines it): the verdict says so.
        median_time_span: headers whose median time bounds the date (11 on Bitcoin and
            Litecoin), or None.
        note: one sentence the verdict prints about what this chain proves.
        checkpoints: headers that place a historic header by its difficulty period
            (``place``), or None; a policy file names a shipped set (``bitcoinj-mainnet``).

    Raises:
        PolicyError: a field out of range.
    """

    name: str
    chain: str
    genesis_hash: bytes | None
    pow_function: PowFunction
    max_target: int
    confirmations: int
    require_window: bool = False
    independent: bool = True
    median_time_span: int | None = None
    note: str = ""
    checkpoints: Checkpoints | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.chain:
            raise PolicyError("a policy needs a name and a chain")
        if self.genesis_hash is not None and len(self.genesis_hash) != 32:
            raise PolicyError("genesis must be 32 bytes")
        if not 0 < self.max_target < 1 << 256:
            raise PolicyError("max_target must be in 1..2**256-1")
        if self.confirmations < 1:
            raise PolicyError("confirmations must be at least 1")
        if self.median_time_span is not None and self.median_time_span < 1:
            raise PolicyError("median_time_span must be at least 1")

    def names_chain(self, label: str) -> bool:
        """Whether a bundle's ``anchor.chain`` names this policy's chain: the policy's
        ``chain``, or its genesis hash in display hex (lower case)."""
        if label == self.chain:
            return True
        return self.genesis_hash is not None and label == self.genesis_hash[::-1].hex()

    def place(self, header: BlockHeader, height: int) -> Placement | str:
        """Place ``header``, claimed as block ``height`` of this policy's chain, for a proof
        that names only a height (an OpenTimestamps attestation).

        Requires: the header meets its own target (the caller checked it). Tried in
        order: the policy's checkpoints (an exact checkpoint, or the bits and time of the
        height's difficulty period: ``Checkpoints.place``), then the least work
        (``max_target``). A height the checkpoints cover is never placed by work alone
        when they refuse it.

        Returns:
            The ``Placement``, or why the header cannot be placed (one sentence).
        """
        reason = "no checkpoints"
        if self.checkpoints is not None:
            placed = self.checkpoints.place(header, height)
            if isinstance(placed, Placement):
                return placed
            reason = placed
            if self.checkpoints.period_start(height) is not None:
                return reason
        if header.target() <= self.max_target:
            return Placement("work", f"its target is at least as hard as policy {self.name}'s")
        return f"{reason}; and its work is below policy {self.name}'s least work per header"

    @classmethod
    def from_pow_params(cls, params: PowParams, *, name: str, note: str) -> TrustPolicy:
        """The policy of a bundled-style chain (``PowParams``): its name, its difficulty as
        the least work, its confirmations; never independent evidence."""
        return cls(
            name=name,
            chain=params.chain,
            genesis_hash=None,
            pow_function=PowFunction.SHA256D,
            max_target=params.target,
            confirmations=params.confirmations,
            independent=False,
            note=note,
        )

    def to_json(self) -> dict[str, Any]:
        """The policy file's JSON object (``from_json`` reads it back)."""
        return {
            "name": self.name,
            "chain": self.chain,
            "genesis": None if self.genesis_hash is None else self.genesis_hash[::-1].hex(),
            "pow": self.pow_function.value,
            "max_target": f"{self.max_target:064x}",
            "confirmations": self.confirmations,
            "require_window": self.require_window,
            "independent": self.independent,
            "median_time_span": self.median_time_span,
            "note": self.note,
            "checkpoints": None if self.checkpoints is None else self.checkpoints.name,
        }

    @classmethod
    def from_json(cls, obj: Any) -> TrustPolicy:
        """Read a policy object (``to_json``'s form; docs/proof-bundle.md).

        ``genesis`` and ``max_target`` are 64 lower-case hex characters, big-endian
        (display order) or ``genesis`` null; unknown keys are refused.

        Raises:
            PolicyError: a missing, unknown or malformed field.
        """
        if not isinstance(obj, Mapping):
            raise PolicyError("a policy must be a JSON object")
        unknown = sorted(set(obj) - _POLICY_KEYS)
        if unknown:
            raise PolicyError(f"unknown policy keys: {', '.join(unknown)}")
        if "genesis" not in obj:
            raise PolicyError("genesis must be given (null for a chain with no fixed genesis)")
        genesis = obj["genesis"]
        return cls(
            name=_text(obj, "name"),
            chain=_text(obj, "chain"),
            genesis_hash=None if genesis is None else _hash(genesis, "genesis")[::-1],
            pow_function=_pow(obj),
            max_target=int.from_bytes(_hash(obj.get("max_target"), "max_target"), "big"),
            confirmations=_int(obj, "confirmations"),
            require_window=_flag(obj, "require_window", default=False),
            independent=_flag(obj, "independent", default=True),
            median_time_span=_optional_int(obj, "median_time_span"),
            note=_text(obj, "note") if "note" in obj else "",
            checkpoints=_checkpoints(obj.get("checkpoints")),
        )


def _checkpoints(name: Any) -> Checkpoints | None:
    if name is None:
        return None
    if name != BITCOIN_MAINNET_CHECKPOINTS:
        raise PolicyError(f"checkpoints must be null or {BITCOIN_MAINNET_CHECKPOINTS!r}")
    return bitcoin_mainnet_checkpoints()


def _pow(obj: Mapping[str, Any]) -> PowFunction:
    name = _text(obj, "pow")
    if name not in {f.value for f in PowFunction}:
        raise PolicyError(f"pow must be one of {', '.join(f.value for f in PowFunction)}")
    return PowFunction(name)


def _text(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise PolicyError(f"{key} must be a string")
    return value


def _hash(value: Any, key: str) -> bytes:
    try:
        return from_hex(value, key, size=32, lowercase=True)
    except DecodeError as exc:
        raise PolicyError(str(exc)) from exc


def _int(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{key} must be an integer")
    return value


def _optional_int(obj: Mapping[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else _int(obj, key)


def _flag(obj: Mapping[str, Any], key: str, *, default: bool) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise PolicyError(f"{key} must be true or false")
    return value


def _display(hex_text: str) -> bytes:
    """Internal-order bytes of a display-order hash (as chainparams write them)."""
    return bytes.fromhex(hex_text)[::-1]


_DIFFICULTY_1_TARGET = 0x00000000FFFF << 208  # bits 0x1d00ffff: powLimit as headers write it
_REGTEST_POW_LIMIT = (1 << 255) - 1  # 0x7fff...ff
_OPERATOR_NOTE = (
    "the operator's own chain: not independent evidence; the confirmations are the operator's own"
)

#: The bundled development chain (``ledger.core.pow.params.PowParams`` defaults).
DEVNET = TrustPolicy.from_pow_params(PowParams(), name="devnet", note=_OPERATOR_NOTE)

_SHIPPED = (
    TrustPolicy(
        name="bitcoin-mainnet",
        chain="bitcoin-mainnet",
        genesis_hash=_display("000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"),
        pow_function=PowFunction.SHA256D,
        max_target=bits_to_target(0x17034219) * 4,
        confirmations=6,
        median_time_span=11,
        note="Bitcoin mainnet: independent evidence, as costly to forge as the work shown",
        checkpoints=bitcoin_mainnet_checkpoints(),
    ),
    TrustPolicy(
        name="bitcoin-testnet",
        chain="bitcoin-testnet",
        genesis_hash=_display("000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943"),
        pow_function=PowFunction.SHA256D,
        max_target=_DIFFICULTY_1_TARGET,
        confirmations=6,
        independent=False,
        median_time_span=11,
        note="a public test network whose blocks anyone may mine at minimum difficulty:"
        " not evidence against a forger",
    ),
    TrustPolicy(
        name="bitcoin-signet",
        chain="bitcoin-signet",
        genesis_hash=_display("00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6"),
        pow_function=PowFunction.SHA256D,
        max_target=0x00000377AE << 216,
        confirmations=6,
        independent=False,
        median_time_span=11,
        note="a public test network; its block signatures are not checked here:"
        " not evidence against a forger",
    ),
    TrustPolicy(
        name="bitcoin-regtest",
        chain="bitcoin-regtest",
        genesis_hash=_display("0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"),
        pow_function=PowFunction.SHA256D,
        max_target=_REGTEST_POW_LIMIT,
        confirmations=1,
        independent=False,
        note=_OPERATOR_NOTE,
    ),
    TrustPolicy(
        name="litecoin-mainnet",
        chain="litecoin-mainnet",
        genesis_hash=_display("12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2"),
        pow_function=PowFunction.SCRYPT,
        max_target=_DIFFICULTY_1_TARGET >> 22,
        confirmations=6,
        median_time_span=11,
        note="Litecoin mainnet: independent evidence, as costly to forge as the work shown",
    ),
    TrustPolicy(
        name="litecoin-regtest",
        chain="litecoin-regtest",
        genesis_hash=_display("530827f38f93b43ed12af0b3ad25a288dc02ed74d6d7857862df51fc56c416f9"),
        pow_function=PowFunction.SCRYPT,
        max_target=_REGTEST_POW_LIMIT,
        confirmations=1,
        independent=False,
        note=_OPERATOR_NOTE,
    ),
    DEVNET,
)

#: Every shipped policy by name, in the order of the module docstring's table.
SHIPPED: Mapping[str, TrustPolicy] = {p.name: p for p in _SHIPPED}


def policy_named(name: str) -> TrustPolicy:
    """The shipped policy ``name``.

    Raises:
        PolicyError: no shipped policy has that name (the message lists them).
    """
    try:
        return SHIPPED[name]
    except KeyError:
        raise PolicyError(f"no policy named {name!r}; shipped: {', '.join(SHIPPED)}") from None


def policy_for_chain(label: str) -> TrustPolicy | None:
    """The shipped policy whose chain ``label`` names (a bundle's ``anchor.chain``), or None.

    For a caller that was given no policy and says so (``notary verify`` without
    ``--policy`` prints that it assumed this one): the bundle's own claim picks the
    policy, and the policy's work, genesis and confirmations still have to hold.
    """
    return next((p for p in SHIPPED.values() if p.names_chain(label)), None)
