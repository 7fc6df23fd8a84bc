"""RFC 3161 time-stamp tokens over a 32-byte root: the request, the response, the check.

ASN.1 and CMS are read with ``asn1crypto`` (it keeps each part's bytes as received, so a
token whose SET OF certificates is not in DER order, as FreeTSA's and GlobalSign's are,
still gets a verdict; strict parsers refuse those); signatures and certificates are
checked with ``cryptography``. Nothing is parsed by hand.

``verify_token(token, digest=..., trust=..., nonce=None)`` runs these checks in order and
raises ``TimestampError`` (``ledger.core.timestamps.errors``) naming the first that fails:

==  ==================  =====================================================================
 1  format              a CMS SignedData (RFC 5652 section 5) of content type id-ct-TSTInfo,
                        one signer, parsing to the end
 2  status              (responses only) ``granted`` or ``grantedWithMods`` (RFC 3161 2.4.2)
 3  imprint             the TSTInfo's message imprint is ``digest`` under the hash named
 4  nonce               the TSTInfo's nonce is the request's (when one is given)
 5  signer              the signer's certificate is in the token and matches the
                        signing-certificate attribute (RFC 2634 5.4 / RFC 5035, ESSCertID v1
                        or v2), which RFC 3161 section 2.4.2 requires
 6  signed attributes   content type is id-ct-TSTInfo, message digest is the TSTInfo's hash
 7  signature           the signer's key verifies the signed attributes
 8  key usage           the signer's certificate has the ``timeStamping`` usage, alone and
                        critical (RFC 3161 section 2.3)
 9  chain               a path of certificates, each valid at ``genTime``, to an anchor of
                        the trust store (``ledger.core.timestamps.tsa_chain``); every
                        certificate the token carries is signed by its issuer where that
                        issuer is at hand (no altered certificate rides along unchecked)
==  ==================  =====================================================================

Bytes are raw inside (DER tokens, 32-byte digests); hex and base64 only at the edges.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from asn1crypto import cms, core, tsp
from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.serialization import Encoding

from ledger.core.timestamps.errors import Check, TimestampError, TimestampRejected
from ledger.core.timestamps.tsa_chain import (
    TsaTrust,
    check_carried_certificates,
    check_signer_certificate,
)

__all__ = [
    "TimestampVerdict",
    "build_request",
    "response_from_token",
    "token_from_response",
    "verify_response",
    "verify_token",
]

_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "sha1": hashes.SHA1,
    "sha224": hashes.SHA224,
    "sha256": hashes.SHA256,
    "sha384": hashes.SHA384,
    "sha512": hashes.SHA512,
}
_GRANTED = ("granted", "granted_with_mods")


class _TimeStampResp(core.Sequence):  # type: ignore[misc]
    """RFC 3161 section 2.4.2's ``TimeStampResp``: the token is OPTIONAL there (absent
    from a rejection), which ``asn1crypto.tsp.TimeStampResp`` does not allow."""

    _fields = [  # noqa: RUF012 - asn1crypto's declaration form
        ("status", tsp.PKIStatusInfo),
        ("time_stamp_token", cms.ContentInfo, {"optional": True}),
    ]


@dataclass(frozen=True)
class TimestampVerdict:
    """What a verified token proves: ``digest`` existed no later than ``gen_time``.

    Attributes:
        tsa: the signer certificate's subject (RFC 4514 string).
        gen_time: the token's ``genTime`` (UTC-aware).
        serial: the token's serial number.
        policy: the TSA policy OID (dotted).
        digest: the stamped digest (raw bytes) and ``hash_name`` its hash (``sha256``).
        trust: the name of the trust store the chain ends in (the policy applied).
        chain: subjects of the path, signer first, anchor last.
        revocation: always ``"not checked"`` (offline: no CRL or OCSP data).
    """

    tsa: str
    gen_time: datetime
    serial: int
    policy: str
    digest: bytes
    hash_name: str
    trust: str
    chain: tuple[str, ...]
    revocation: str = "not checked"

    def describe(self) -> str:
        """One line: who, when, which serial, under which trust store."""
        return (
            f"{self.tsa} at {self.gen_time.isoformat()} (serial {self.serial}),"
            f" trusted by {self.trust}; revocation {self.revocation}"
        )


def build_request(digest: bytes, *, nonce: int, hash_name: str = "sha256") -> bytes:
    """A DER ``TimeStampReq`` (RFC 3161 section 2.4.1) over ``digest``, asking for the
    TSA's certificate (``certReq``) with ``nonce`` (a positive integer, at most 64 bits).

    Raises:
        ValueError: ``digest`` is not the length of ``hash_name``'s output, or the nonce
            is out of range.
    """
    _check_digest(digest, hash_name)
    if not 0 < nonce < 2**64:
        raise ValueError("the nonce must be a positive 64-bit integer")
    request = tsp.TimeStampReq(
        {
            "version": 1,
            "message_imprint": {
                "hash_algorithm": {"algorithm": hash_name},
                "hashed_message": digest,
            },
            "nonce": nonce,
            "cert_req": True,
        }
    )
    return bytes(request.dump())


def token_from_response(response: bytes) -> bytes:
    """The DER token (a CMS ``ContentInfo``) of a DER ``TimeStampResp``.

    Raises:
        TimestampRejected: the status is not granted (check 2).
        TimestampError: check 1: the bytes are no response, or a granted one without token.
    """
    parsed = _parse(_TimeStampResp, response, "time-stamp response")
    try:
        status = parsed["status"]["status"].native
        text = " ".join(parsed["status"]["status_string"].native or [])
        token = parsed["time_stamp_token"]
        present = not isinstance(token, core.Void)
    except (ValueError, TypeError, KeyError) as exc:
        raise TimestampError(Check.FORMAT, f"the response does not parse: {exc}") from exc
    if status not in _GRANTED:
        raise TimestampRejected(str(status), text)
    if not present:
        raise TimestampError(Check.FORMAT, "a granted response without a token")
    return bytes(token.dump())


def response_from_token(token: bytes) -> bytes:
    """A DER ``TimeStampResp`` with status ``granted`` around the DER ``token`` (what
    ``openssl ts -verify -in`` reads; RFC 3161 section 2.4.2)."""
    response = _TimeStampResp(
        {"status": {"status": "granted"}, "time_stamp_token": cms.ContentInfo.load(token)}
    )
    return bytes(response.dump())


def verify_response(
    response: bytes,
    *,
    digest: bytes,
    trust: TsaTrust,
    nonce: int | None,
    hash_name: str = "sha256",
) -> tuple[bytes, TimestampVerdict]:
    """Check a TSA's answer to ``build_request``: returns the token and its verdict.

    Raises:
        TimestampError: any of the checks of the module docstring.
    """
    token = token_from_response(response)
    return token, verify_token(token, digest=digest, trust=trust, nonce=nonce, hash_name=hash_name)


def verify_token(
    token: bytes,
    *,
    digest: bytes,
    trust: TsaTrust,
    nonce: int | None = None,
    hash_name: str = "sha256",
) -> TimestampVerdict:
    """Verify a DER token over ``digest`` offline against ``trust`` (the policy applied).

    Raises:
        TimestampError: the first failing check of the module docstring (1, 3-9).
    """
    try:
        return _verify(token, digest=digest, trust=trust, nonce=nonce, hash_name=hash_name)
    except TimestampError:
        raise
    except Exception as exc:  # asn1crypto parses lazily: a malformed part raises on use
        raise TimestampError(Check.FORMAT, f"a part of the token is malformed ({exc})") from exc


def _verify(
    token: bytes, *, digest: bytes, trust: TsaTrust, nonce: int | None, hash_name: str
) -> TimestampVerdict:
    signed, signer_info, tst_bytes, tst = _open_token(token)
    _check_imprint(tst, digest, hash_name)
    if nonce is not None and _field(tst, "nonce") != nonce:
        raise TimestampError(Check.NONCE, "the token's nonce is not the request's")
    certs = _certificates(signed)
    signer = _find_signer(signer_info, certs)
    _check_signed_attributes(signer_info, signer, tst_bytes)
    _check_signature(signer_info, signer)
    gen_time = _field(tst, "gen_time")
    path = check_signer_certificate(signer, extra=certs, trust=trust, at=gen_time)
    check_carried_certificates(certs, trust=trust)
    return TimestampVerdict(
        tsa=signer.subject.rfc4514_string(),
        gen_time=gen_time,
        serial=int(_field(tst, "serial_number")),
        policy=str(_field(tst, "policy")),
        digest=digest,
        hash_name=hash_name,
        trust=trust.name,
        chain=tuple(c.subject.rfc4514_string() for c in path),
    )


# -- check 1: format ------------------------------------------------------------------------


def _parse(spec: Any, data: bytes, what: str) -> Any:
    try:
        parsed = spec.load(data, strict=True)
        parsed.native  # noqa: B018 - parse every field now, so errors surface here
    except (ValueError, TypeError, KeyError) as exc:
        raise TimestampError(Check.FORMAT, f"the {what} does not parse: {exc}") from exc
    return parsed


def _open_token(token: bytes) -> tuple[Any, Any, bytes, Any]:
    info = _parse(cms.ContentInfo, token, "token")
    try:
        if info["content_type"].native != "signed_data":
            raise TimestampError(Check.FORMAT, "the token is not a CMS SignedData")
        signed = info["content"]
        encap = signed["encap_content_info"]
        if encap["content_type"].native != "tst_info":
            raise TimestampError(Check.FORMAT, "the signed content is not a TSTInfo")
        if len(signed["signer_infos"]) != 1:
            raise TimestampError(Check.FORMAT, "the token must have exactly one signer")
        _check_versions(signed)
        tst_bytes = bytes(encap["content"].contents)
        tst = _parse(tsp.TSTInfo, tst_bytes, "TSTInfo")
    except (ValueError, TypeError, KeyError) as exc:
        raise TimestampError(Check.FORMAT, f"the token does not parse: {exc}") from exc
    return signed, signed["signer_infos"][0], tst_bytes, tst


def _check_versions(signed: Any) -> None:
    """RFC 5652 sections 5.1 and 5.3: SignedData version 3 (the content is not id-data),
    SignerInfo version 1 or 3 as its signer identifier, and the signer's digest algorithm
    among the SignedData's."""
    signer_info = signed["signer_infos"][0]
    wanted = 1 if signer_info["sid"].name == "issuer_and_serial_number" else 3
    if signed["version"].native != "v3" or signer_info["version"].native != f"v{wanted}":
        raise TimestampError(Check.FORMAT, "the SignedData or SignerInfo version is wrong")
    digest = signer_info["digest_algorithm"]["algorithm"].native
    if digest not in [a["algorithm"].native for a in signed["digest_algorithms"]]:
        raise TimestampError(Check.FORMAT, "the signer's digest algorithm is not listed")


def _field(parsed: Any, name: str) -> Any:
    return parsed[name].native


# -- checks 3-5 -----------------------------------------------------------------------------


def _check_digest(digest: bytes, hash_name: str) -> None:
    algorithm = _HASHES.get(hash_name)
    if algorithm is None or len(digest) != algorithm().digest_size:
        raise ValueError(f"a {hash_name} digest is {len(digest)} bytes long")


def _check_imprint(tst: Any, digest: bytes, hash_name: str) -> None:
    imprint = tst["message_imprint"]
    named = imprint["hash_algorithm"]["algorithm"].native
    if named != hash_name:
        raise TimestampError(Check.IMPRINT, f"the token stamps a {named} digest, not {hash_name}")
    stamped = imprint["hashed_message"].native
    if stamped != digest:
        raise TimestampError(Check.IMPRINT, f"the token stamps {stamped.hex()}, not {digest.hex()}")


def _certificates(signed: Any) -> list[x509.Certificate]:
    found: list[x509.Certificate] = []
    for choice in signed["certificates"] or []:
        if choice.name != "certificate":
            continue
        try:
            found.append(x509.load_der_x509_certificate(choice.chosen.dump()))
        except ValueError as exc:
            raise TimestampError(Check.FORMAT, "a certificate of the token does not parse") from exc
    return found


def _find_signer(signer_info: Any, certs: list[x509.Certificate]) -> x509.Certificate:
    sid = signer_info["sid"]
    for cert in certs:
        if _identifies(sid, cert):
            _check_ess(signer_info, cert)
            return cert
    raise TimestampError(Check.SIGNER, "the token does not hold its signer's certificate")


def _identifies(sid: Any, cert: x509.Certificate) -> bool:
    if sid.name == "issuer_and_serial_number":
        wanted = sid.chosen
        return bool(
            wanted["serial_number"].native == cert.serial_number
            and wanted["issuer"].dump() == cert.issuer.public_bytes()
        )
    try:
        ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    except x509.ExtensionNotFound:
        return False
    return bool(sid.chosen.native == ski)


def _check_ess(signer_info: Any, cert: x509.Certificate) -> None:
    der = cert.public_bytes(Encoding.DER)
    for attribute in signer_info["signed_attrs"] or []:
        kind = attribute["type"].native
        if kind == "signing_certificate":
            first = attribute["values"][0]["certs"][0]
            wanted, computed = first["cert_hash"].native, hashlib.sha1(der).digest()  # noqa: S324
        elif kind == "signing_certificate_v2":
            first = attribute["values"][0]["certs"][0]
            name = first["hash_algorithm"]["algorithm"].native
            wanted, computed = first["cert_hash"].native, hashlib.new(name, der).digest()
        else:
            continue
        if wanted != computed:
            raise TimestampError(
                Check.SIGNER, "the signing-certificate attribute names another certificate"
            )
        return
    raise TimestampError(Check.SIGNER, "no signing-certificate attribute (RFC 3161 2.4.2)")


# -- checks 6-7 -----------------------------------------------------------------------------


def _check_signed_attributes(signer_info: Any, signer: x509.Certificate, tst: bytes) -> None:
    values = {a["type"].native: a["values"][0].native for a in signer_info["signed_attrs"]}
    if values.get("content_type") != "tst_info":
        raise TimestampError(Check.SIGNED_ATTRIBUTES, "the content-type attribute is not TSTInfo")
    name = signer_info["digest_algorithm"]["algorithm"].native
    if name not in _HASHES:
        raise TimestampError(Check.SIGNED_ATTRIBUTES, f"unsupported digest algorithm {name}")
    if values.get("message_digest") != hashlib.new(name, tst).digest():
        raise TimestampError(
            Check.SIGNED_ATTRIBUTES, "the message-digest attribute is not the TSTInfo's hash"
        )


def _check_signature(signer_info: Any, signer: x509.Certificate) -> None:
    attrs = signer_info["signed_attrs"].dump()
    signed_bytes = b"\x31" + attrs[1:]  # the SET OF as signed (RFC 5652 section 5.4)
    signature = signer_info["signature"].native
    algorithm = signer_info["signature_algorithm"]
    hash_name = signer_info["digest_algorithm"]["algorithm"].native
    key = signer.public_key()
    try:
        _verify_with(key, algorithm, signature, signed_bytes, _HASHES[hash_name]())
    except (InvalidSignature, UnsupportedAlgorithm, ValueError, TypeError) as exc:
        raise TimestampError(
            Check.SIGNATURE, "the signature does not verify with the signer's key"
        ) from exc


def _verify_with(
    key: Any, algorithm: Any, signature: bytes, data: bytes, digest: hashes.HashAlgorithm
) -> None:
    kind = algorithm.signature_algo
    named = algorithm["algorithm"].native
    names_hash = kind != "rsassa_pss" and named not in ("rsa", "rsassa_pkcs1v15")
    if names_hash and _HASHES.get(algorithm.hash_algo) is not type(digest):  # sha384_ecdsa
        raise TimestampError(Check.SIGNATURE, "the signature algorithm names another digest")
    if isinstance(key, rsa.RSAPublicKey) and kind == "rsassa_pkcs1v15":
        key.verify(signature, data, padding.PKCS1v15(), digest)
    elif isinstance(key, rsa.RSAPublicKey) and kind == "rsassa_pss":
        params = algorithm["parameters"]
        pss_hash = _HASHES[params["hash_algorithm"]["algorithm"].native]()
        mgf = padding.MGF1(pss_hash)
        pss = padding.PSS(mgf, params["salt_length"].native)
        key.verify(signature, data, pss, pss_hash)
    elif isinstance(key, ec.EllipticCurvePublicKey) and kind == "ecdsa":
        key.verify(signature, data, ec.ECDSA(digest))
    else:
        raise TimestampError(Check.SIGNATURE, f"signature algorithm {kind} with this key")
