"""The ``timestamps`` section of a version-3 proof bundle, and its offline check.

docs/proof-bundle.md, "Version 3": the independent timestamps of the root the bundle's
receipt leads to (the directory block's KeyMR)::

    "timestamps": {
      "root": "<KeyMR hex>",
      "rfc3161": [{"token": "<DER base64>", "certificates": ["<DER base64>", ...]}, ...],
      "opentimestamps": [{"ots": "<.ots file, base64>", "headers": ["<160 hex>", ...]}, ...]
    }

``certificates`` are the ones the token carries, listed apart for readers without a CMS
parser; the check uses the token's own. ``opentimestamps`` holds ``OtsStamp`` s
(``ledger.core.timestamps.ots``, which checks them: ``check_ots``); a section written
before that key existed is read as having none, and writers always write it. ``check_timestamps`` checks every token against a
trust store; without one (``trust=None``) each is reported ``not checked``, never as
verified: trust is the verifier's explicit choice.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ledger.core.errors import DecodeError
from ledger.core.hexbytes import from_hex
from ledger.core.pow.header import HEADER_BYTES
from ledger.core.timestamps.errors import TimestampError

if TYPE_CHECKING:
    from ledger.core.timestamps.rfc3161 import TimestampVerdict
    from ledger.core.timestamps.tsa_chain import TsaTrust

__all__ = [
    "OtsStamp",
    "Rfc3161Token",
    "TimestampCheck",
    "TimestampsPart",
    "check_timestamps",
    "token_certificates",
    "tokens_from_answer",
]


@dataclass(frozen=True)
class Rfc3161Token:
    """One token (DER) and the certificates it carries (DER each)."""

    token: bytes
    certificates: tuple[bytes, ...]

    @classmethod
    def of(cls, token: bytes) -> Rfc3161Token:
        """The token with its carried certificates listed (``token_certificates``)."""
        return cls(token, token_certificates(token))


@dataclass(frozen=True)
class OtsStamp:
    """One element of ``timestamps.opentimestamps``: a ``.ots`` file and its headers.

    Attributes:
        ots: the complete detached timestamp file's bytes (module docstring).
        headers: 80-byte Bitcoin block headers, as given (checked by ``check_ots``).
    """

    ots: bytes
    headers: tuple[bytes, ...]

    def to_json(self) -> dict[str, Any]:
        """``{"ots": <base64>, "headers": [<160 lower-case hex>, ...]}``."""
        return {
            "ots": base64.b64encode(self.ots).decode("ascii"),
            "headers": [h.hex() for h in self.headers],
        }

    @classmethod
    def from_json(cls, obj: Any) -> OtsStamp:
        """Read one element: exactly the keys ``ots`` and ``headers``.

        Raises:
            DecodeError: not an object, other keys, bad base64, a header that is not 160
                lower-case hex characters.
        """
        if not isinstance(obj, Mapping) or set(obj) != {"ots", "headers"}:
            raise DecodeError("an opentimestamps element must hold exactly ots and headers")
        value, headers = obj["ots"], obj["headers"]
        if not isinstance(value, str) or not isinstance(headers, list):
            raise DecodeError("opentimestamps ots must be base64 text, headers a list")
        try:
            ots = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise DecodeError(f"opentimestamps ots is not base64: {exc}") from exc
        return cls(
            ots,
            tuple(
                from_hex(h, "opentimestamps header", size=HEADER_BYTES, lowercase=True)
                for h in headers
            ),
        )


@dataclass(frozen=True)
class TimestampsPart:
    """The ``timestamps`` section: the stamped ``root`` (raw 32 bytes), its RFC 3161 tokens
    and its OpenTimestamps stamps."""

    root: bytes
    rfc3161: tuple[Rfc3161Token, ...]
    opentimestamps: tuple[OtsStamp, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The section's JSON object (module docstring)."""
        return {
            "root": self.root.hex(),
            "rfc3161": [
                {"token": _b64(t.token), "certificates": [_b64(c) for c in t.certificates]}
                for t in self.rfc3161
            ],
            "opentimestamps": [s.to_json() for s in self.opentimestamps],
        }

    @classmethod
    def from_json(cls, obj: Any) -> TimestampsPart:
        """Parse the section.

        Raises:
            DecodeError: not an object, bad hex or base64, a missing field (but for
                ``opentimestamps``, read as none).
        """
        if not isinstance(obj, Mapping):
            raise DecodeError("timestamps must be a JSON object")
        tokens = obj.get("rfc3161")
        if not isinstance(tokens, list):
            raise DecodeError("timestamps.rfc3161 must be a list")
        parsed = []
        for i, item in enumerate(tokens):
            if not isinstance(item, Mapping) or not isinstance(item.get("certificates"), list):
                raise DecodeError(f"timestamps.rfc3161[{i}] must hold token and certificates")
            certs = tuple(_from_b64(c, f"rfc3161[{i}] certificate") for c in item["certificates"])
            parsed.append(Rfc3161Token(_from_b64(item.get("token"), f"rfc3161[{i}]"), certs))
        stamps = obj.get("opentimestamps", [])
        if not isinstance(stamps, list):
            raise DecodeError("timestamps.opentimestamps must be a list")
        return cls(
            from_hex(obj.get("root"), "timestamps root", size=32),
            tuple(parsed),
            tuple(OtsStamp.from_json(s) for s in stamps),
        )


@dataclass(frozen=True)
class TimestampCheck:
    """The outcome for one token: ``verified`` (with its ``verdict``), ``failed`` (with
    the ``reason``) or ``not checked`` (no trust store given)."""

    index: int
    status: Literal["verified", "failed", "not checked"]
    verdict: TimestampVerdict | None = None
    reason: str | None = None


def check_timestamps(
    part: TimestampsPart, *, root: bytes, trust: TsaTrust | None
) -> list[TimestampCheck]:
    """Check every RFC 3161 token of ``part`` over ``root`` (the KeyMR the bundle's
    verified receipt leads to) against ``trust``; one ``TimestampCheck`` per token.

    A section whose ``root`` is not ``root`` fails every token.
    """
    # Imported here: the CMS and X.509 code (asn1crypto, cryptography) costs every process
    # that only reads or writes bundles (the API, the pipeline) ~10 MB of memory.
    from ledger.core.timestamps.rfc3161 import verify_token

    checks = []
    for i, item in enumerate(part.rfc3161):
        if trust is None:
            checks.append(TimestampCheck(i, "not checked", reason="no TSA trust store given"))
            continue
        if part.root != root:
            checks.append(TimestampCheck(i, "failed", reason="stamps another root"))
            continue
        try:
            verdict = verify_token(item.token, digest=root, trust=trust)
        except TimestampError as exc:
            checks.append(TimestampCheck(i, "failed", reason=str(exc)))
            continue
        checks.append(TimestampCheck(i, "verified", verdict=verdict))
    return checks


def token_certificates(token: bytes) -> tuple[bytes, ...]:
    """The DER certificates a DER token carries (none when it does not parse)."""
    from asn1crypto import cms  # see check_timestamps

    try:
        signed = cms.ContentInfo.load(token)["content"]
        return tuple(
            bytes(c.chosen.dump()) for c in signed["certificates"] or [] if c.name == "certificate"
        )
    except (ValueError, TypeError, KeyError):
        return ()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _from_b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise DecodeError(f"{what} must be base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DecodeError(f"{what} is not base64: {exc}") from exc


def tokens_from_answer(answer: Mapping[str, Any] | None) -> Sequence[bytes]:
    """The DER tokens of an ``anchor-timestamps`` answer (``ledger.anchor.timestamp_rpc``)."""
    if not answer:
        return ()
    return tuple(_from_b64(t.get("token"), "token") for t in answer.get("rfc3161") or [])
