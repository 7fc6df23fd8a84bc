"""The trust side of an RFC 3161 token: a named trust store and the certificate path.

``TsaTrust`` is the trust policy of a token check: a name (shown in every verdict) and
the certificates it trusts as anchors. ``check_signer_certificate`` checks what RFC 3161
section 2.3 asks of the signing certificate (the extended key usage ``timeStamping``, the
only one, critical) and walks from it to an anchor through the token's certificates, each
link checked with ``cryptography`` (the issuer's name and signature, its CA flag) and each
certificate valid at the token's ``genTime``, never at today's date: a TSA certificate
expires, its tokens stay valid (RFC 3161 section 4, "time-stamp token validity").
Revocation is not checked (no CRL or OCSP data offline); the verdict says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID

from ledger.core.timestamps.errors import Check, TimestampError

__all__ = ["TsaTrust", "check_carried_certificates", "check_signer_certificate"]

_MAX_PATH = 8


@dataclass(frozen=True)
class TsaTrust:
    """A trust store for TSA certificates: ``name`` (a file name, say) and its anchors.

    Raises (``from_pem``):
        ValueError: the PEM text holds no certificate, or one that does not parse.
    """

    name: str
    anchors: tuple[x509.Certificate, ...]

    @classmethod
    def from_pem(cls, pem: bytes, *, name: str) -> TsaTrust:
        """The certificates of ``pem`` (one or more PEM blocks) trusted as ``name``."""
        certs = tuple(x509.load_pem_x509_certificates(pem))
        return cls(name, certs)

    def is_anchor(self, cert: x509.Certificate) -> bool:
        """Whether ``cert`` is one of the anchors (byte for byte)."""
        return any(cert == anchor for anchor in self.anchors)


def check_signer_certificate(
    signer: x509.Certificate,
    *,
    extra: Sequence[x509.Certificate],
    trust: TsaTrust,
    at: datetime,
) -> tuple[x509.Certificate, ...]:
    """Check ``signer``'s key usage and its path to ``trust`` at time ``at`` (UTC-aware).

    ``extra`` are the intermediate candidates (the token's own certificates). Returns the
    path, signer first, anchor last.

    Raises:
        TimestampError: check 8 (key usage) or 9 (chain): no ``timeStamping`` usage, or no
            path of valid, correctly signed certificates to an anchor of ``trust``.
    """
    _check_key_usage(signer)
    path = [signer]
    pool = [*trust.anchors, *extra]
    while True:
        current = path[-1]
        _check_validity(current, at)
        if trust.is_anchor(current):
            return tuple(path)
        if len(path) >= _MAX_PATH:
            raise TimestampError(Check.CHAIN, f"no anchor within {_MAX_PATH} certificates")
        issuer = _issuer_of(current, pool, seen=path)
        if issuer is None:
            name = current.subject.rfc4514_string()
            if current.subject == current.issuer:
                reason = f"the path ends at {name}, which the trust store {trust.name!r} lacks"
            else:
                reason = f"{name} is not issued by a certificate of the trust store {trust.name!r}"
            raise TimestampError(Check.CHAIN, reason)
        path.append(issuer)


def check_carried_certificates(certs: Sequence[x509.Certificate], *, trust: TsaTrust) -> None:
    """Check that each of ``certs`` (a token's) carries the valid signature of an issuer
    among ``certs`` or the anchors (itself, when self-signed): a token carries no
    certificate that its verifier cannot check, so no altered one rides along.

    Raises:
        TimestampError: check 9 (chain), naming the certificate that does not verify.
    """
    pool = [*trust.anchors, *certs]
    for cert in certs:
        if trust.is_anchor(cert):
            continue
        named = [c for c in pool if c.subject == cert.issuer and c is not cert]
        if cert.subject == cert.issuer:
            named.append(cert)  # self-signed: its own key
        if not any(_signed_by(cert, issuer) for issuer in named):
            raise TimestampError(
                Check.CHAIN,
                f"the token's certificate {cert.subject.rfc4514_string()} is"
                " not signed by an issuer at hand",
            )


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
    except (InvalidSignature, ValueError, TypeError):  # wrong key, unsupported key type
        return False
    return True


def _check_key_usage(cert: x509.Certificate) -> None:
    try:
        ext = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    except x509.ExtensionNotFound:
        raise TimestampError(Check.KEY_USAGE, "the signer has no extended key usage") from None
    usages = list(ext.value)
    if usages != [ExtendedKeyUsageOID.TIME_STAMPING]:
        raise TimestampError(Check.KEY_USAGE, "the signer's key usage is not timeStamping only")
    if not ext.critical:
        raise TimestampError(Check.KEY_USAGE, "the signer's timeStamping usage is not critical")


def _check_validity(cert: x509.Certificate, at: datetime) -> None:
    if not cert.not_valid_before_utc <= at <= cert.not_valid_after_utc:
        raise TimestampError(
            Check.CHAIN,
            f"{cert.subject.rfc4514_string()} is valid {cert.not_valid_before_utc:%Y-%m-%d}"
            f" to {cert.not_valid_after_utc:%Y-%m-%d}, not at the token's time {at:%Y-%m-%d}",
        )


def _issuer_of(
    cert: x509.Certificate, pool: Sequence[x509.Certificate], *, seen: Sequence[x509.Certificate]
) -> x509.Certificate | None:
    for candidate in pool:
        if candidate.subject != cert.issuer or any(candidate == s for s in seen):
            continue
        if _is_ca(candidate) and _signed_by(cert, candidate):
            return candidate
    return None


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        return False
    return constraints.ca
