"""Coin (factoid) transactions: layout, hashes, fees and RCD1 signatures (docs/formats.md §4).

Layout (factomd ``common/factoid/transaction.go``)::

    varInt_F version (always 2)
    6 bytes  timestamp, Unix milliseconds, big-endian uint48 (section 0.5)
    1 byte   #inputs, 1 byte #outputs, 1 byte #EC outputs
    inputs       each: varInt_F amount (minor units) || 32-byte RCD hash
    outputs      each: varInt_F amount || 32-byte RCD hash
    EC outputs   each: varInt_F amount (minor units, not EC) || 32-byte EC public key
    ---- end of the "ledger part" (the signed message) ----
    per input, in order: RCD1 (01 || public key, 33 bytes) || ed25519 signature (64 bytes)

TxID = SHA256(ledger part); full hash = SHA256(whole transaction). Only RCD type 1 is
accepted (type 2 parses in factomd but can never validate; other types do not parse).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ledger.core.addresses import ec_public_address, fct_public_address, rcd1, rcd_hash
from ledger.core.blocks._codec import (
    Reader,
    check_bytes,
    check_hash,
    check_uint,
    uint_bytes,
    varint_bytes,
)
from ledger.core.errors import DecodeError, LimitError, SignatureError
from ledger.core.hashing import sha256
from ledger.core.keys import SigningKey, verify_signature

__all__ = [
    "MAX_TRANSACTION_BYTES",
    "RCD1_BYTES",
    "TRANSACTION_VERSION",
    "Transaction",
    "TxAddress",
]

TRANSACTION_VERSION = 2
MAX_TRANSACTION_BYTES = 10240  # factomd MAX_TRANSACTION_SIZE (section 4.3)
RCD1_BYTES = 33
SIGNATURE_BYTES = 64
_MAX_IO_COUNT = 255  # one count byte each
_OUTPUT_FEE_EC = 10  # EC-equivalents per FCT or EC output (section 4.3)


@dataclass(frozen=True)
class TxAddress:
    """One input or output: ``amount`` in minor units and a raw 32-byte ``address``.

    ``address`` is an RCD hash for inputs and coin outputs, an EC public key for EC outputs.
    """

    amount: int
    address: bytes

    def __post_init__(self) -> None:
        check_uint(self.amount, 64, "amount")
        object.__setattr__(self, "address", check_hash(self.address, "address"))

    def marshal(self) -> bytes:
        """``varInt_F amount || address``."""
        return varint_bytes(self.amount) + self.address

    @classmethod
    def read(cls, reader: Reader) -> TxAddress:
        """Read one address record from ``reader`` (DecodeError when short)."""
        amount = reader.varint()
        return cls(amount, reader.hash32())

    def to_json(self, *, ec: bool = False) -> dict[str, Any]:
        """``{"amount", "address" (hex), "useraddress" (FA... or, with ec=True, EC...)}``."""
        user = ec_public_address(self.address) if ec else fct_public_address(self.address)
        return {"amount": self.amount, "address": self.address.hex(), "useraddress": user}


def _tuple_of(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(values)


@dataclass(frozen=True)
class Transaction:
    """A coin transaction; immutable. Lists passed in are stored as tuples.

    Attributes:
        timestamp_ms: Unix time in milliseconds (fits 48 bits).
        inputs / outputs / ec_outputs: at most 255 each.
        rcds: 33-byte RCD1 per input (``01 || public key``), or empty when unsigned.
        signatures: 64-byte ed25519 signature per input over ``ledger_part()``, or empty.

    Raises (construction): LimitError for counts/amounts/timestamp out of range,
    DecodeError for wrong byte lengths, non-RCD1 RCDs, or rcds/signatures whose count is
    neither 0 nor the number of inputs.
    """

    timestamp_ms: int
    inputs: tuple[TxAddress, ...] = ()
    outputs: tuple[TxAddress, ...] = ()
    ec_outputs: tuple[TxAddress, ...] = ()
    rcds: tuple[bytes, ...] = ()
    signatures: tuple[bytes, ...] = ()

    def __post_init__(self) -> None:
        check_uint(self.timestamp_ms, 48, "timestamp_ms")
        for name in ("inputs", "outputs", "ec_outputs", "rcds", "signatures"):
            object.__setattr__(self, name, _tuple_of(getattr(self, name)))
        for name in ("inputs", "outputs", "ec_outputs"):
            if len(getattr(self, name)) > _MAX_IO_COUNT:
                raise LimitError(f"a transaction has at most {_MAX_IO_COUNT} {name}")
            if not all(isinstance(a, TxAddress) for a in getattr(self, name)):
                raise DecodeError(f"{name} must be TxAddress values")
        self._check_signature_fields()

    def _check_signature_fields(self) -> None:
        if len(self.rcds) != len(self.signatures) or len(self.rcds) not in (0, len(self.inputs)):
            raise DecodeError("rcds and signatures must be empty or one per input")
        rcds = tuple(check_bytes(r, RCD1_BYTES, "RCD1") for r in self.rcds)
        if any(r[0] != 1 for r in rcds):
            raise DecodeError("only RCD type 1 is supported")
        sigs = tuple(check_bytes(s, SIGNATURE_BYTES, "signature") for s in self.signatures)
        object.__setattr__(self, "rcds", rcds)
        object.__setattr__(self, "signatures", sigs)

    # -- binary -----------------------------------------------------------------------

    @property
    def is_signed(self) -> bool:
        """True when every input carries an RCD and a signature (always True with 0 inputs)."""
        return len(self.rcds) == len(self.inputs)

    def ledger_part(self) -> bytes:
        """The signed message: version ... last EC output (section 4.1)."""
        parts = [
            varint_bytes(TRANSACTION_VERSION),
            uint_bytes(self.timestamp_ms, 6, "timestamp_ms"),
            bytes([len(self.inputs), len(self.outputs), len(self.ec_outputs)]),
        ]
        parts += [a.marshal() for a in (*self.inputs, *self.outputs, *self.ec_outputs)]
        return b"".join(parts)

    def marshal(self) -> bytes:
        """Full signed transaction bytes (the ``transaction`` hex of ``coin-submit``).

        Raises:
            SignatureError: inputs without RCDs/signatures (call ``sign`` first).
        """
        if not self.is_signed:
            raise SignatureError("transaction is not signed; it cannot be marshalled")
        tail = b"".join(r + s for r, s in zip(self.rcds, self.signatures, strict=True))
        return self.ledger_part() + tail

    @classmethod
    def read(cls, reader: Reader) -> Transaction:
        """Read one transaction from ``reader``; DecodeError on any malformed field."""
        version = reader.varint()
        if version != TRANSACTION_VERSION:
            raise DecodeError(f"transaction version must be 2, got {version}")
        timestamp_ms = reader.uint(6)
        counts = reader.take(3)
        inputs, outputs, ec_outputs = (
            tuple(TxAddress.read(reader) for _ in range(n)) for n in counts
        )
        rcds, sigs = [], []
        for _ in range(counts[0]):
            if reader.peek() != 1:
                raise DecodeError(f"unsupported RCD type {reader.peek()}")
            rcds.append(reader.take(RCD1_BYTES))
            sigs.append(reader.take(SIGNATURE_BYTES))
        return cls(timestamp_ms, inputs, outputs, ec_outputs, tuple(rcds), tuple(sigs))

    @classmethod
    def unmarshal(cls, data: bytes) -> Transaction:
        """Parse exactly one signed transaction; DecodeError on malformed or trailing bytes."""
        reader = Reader(data, "transaction")
        tx = cls.read(reader)
        reader.expect_end()
        return tx

    # -- hashes, sizes, fees ----------------------------------------------------------

    def txid(self) -> bytes:
        """SHA256(ledger part), 32 bytes: what ``coin-submit`` returns and acks key on."""
        return sha256(self.ledger_part())

    def full_hash(self) -> bytes:
        """SHA256(full signed transaction), 32 bytes: the F-block BodyMR leaf (section 4.2)."""
        return sha256(self.marshal())

    def signed_size(self) -> int:
        """Byte length of the signed form (33-byte RCD1 + 64-byte signature per input)."""
        return len(self.ledger_part()) + (RCD1_BYTES + SIGNATURE_BYTES) * len(self.inputs)

    def fee(self, rate: int) -> int:
        """Minimum fee in minor units at ``rate`` minor units per EC (section 4.3).

        ``rate * (ceil(size/1024) + 10 * (#outputs + #EC outputs) + #inputs)`` where size is
        ``signed_size()``, so the fee of an unsigned transaction equals that of its signed
        form. Raises LimitError when the signed size exceeds 10240 bytes or rate < 0.
        """
        check_uint(rate, 64, "rate")
        size = self.signed_size()
        if size > MAX_TRANSACTION_BYTES:
            raise LimitError(f"transaction of {size} bytes exceeds {MAX_TRANSACTION_BYTES}")
        outputs = len(self.outputs) + len(self.ec_outputs)
        return rate * (-(-size // 1024) + _OUTPUT_FEE_EC * outputs + len(self.inputs))

    def total_inputs(self) -> int:
        """Sum of input amounts (minor units)."""
        return sum(a.amount for a in self.inputs)

    def total_outputs(self) -> int:
        """Sum of coin and EC output amounts (minor units)."""
        return sum(a.amount for a in (*self.outputs, *self.ec_outputs))

    # -- signatures -------------------------------------------------------------------

    def sign(self, keys: Iterable[SigningKey]) -> Transaction:
        """Copy with an RCD1 and a signature over ``ledger_part()`` for every input.

        ``keys`` may come in any order; each input uses the key whose RCD hash equals the
        input address (one key may sign several inputs).

        Raises:
            SignatureError: no key matches some input's address.
        """
        by_address = {rcd_hash(k.public_key): k for k in keys}
        message = self.ledger_part()
        rcds, sigs = [], []
        for position, item in enumerate(self.inputs):
            key = by_address.get(item.address)
            if key is None:
                raise SignatureError(
                    f"no key for input {position} ({fct_public_address(item.address)})"
                )
            rcds.append(rcd1(key.public_key))
            sigs.append(key.sign(message))
        return Transaction(
            self.timestamp_ms, self.inputs, self.outputs, self.ec_outputs, tuple(rcds), tuple(sigs)
        )

    def verify_signatures(self) -> None:
        """Check every input's RCD and signature; returns None when all are good.

        Raises:
            SignatureError: unsigned, an RCD whose SHA256d differs from the input address,
                or a signature that does not verify canonically over ``ledger_part()``.
        """
        if not self.is_signed:
            raise SignatureError("transaction is not signed")
        message = self.ledger_part()
        for position, (item, rcd, sig) in enumerate(
            zip(self.inputs, self.rcds, self.signatures, strict=True)
        ):
            public_key = rcd[1:]
            if rcd_hash(public_key) != item.address:
                raise SignatureError(f"RCD {position} does not match input address")
            if not verify_signature(public_key, message, sig):
                raise SignatureError(f"signature {position} does not verify")

    # -- JSON -------------------------------------------------------------------------

    def to_json(self, *, block_height: int = 0) -> dict[str, Any]:
        """Node JSON shape (section 4.5): txid, blockheight, millitimestamp, inputs, outputs,
        outecs, rcds (hex), sigblocks ``[{"signatures": [hex]}]``."""
        return {
            "txid": self.txid().hex(),
            "blockheight": block_height,
            "millitimestamp": self.timestamp_ms,
            "inputs": [a.to_json() for a in self.inputs],
            "outputs": [a.to_json() for a in self.outputs],
            "outecs": [a.to_json(ec=True) for a in self.ec_outputs],
            "rcds": [r.hex() for r in self.rcds],
            "sigblocks": [{"signatures": [s.hex()]} for s in self.signatures],
        }
