"""The page checks RFC 3161 tokens as Python does (``ledger.core.timestamps.rfc3161``).

Table-driven: every vector (the public tokens of tests/vectors/rfc3161/, tokens of the
harness's real OpenSSL TSA, one-byte mutations) is checked by ``verify_token`` and by the
page's ``NotaryTsp.verifyToken`` in Chromium, and the two must agree on the outcome (the
failed check's number, or the verdict's TSA, genTime and serial). Then the page as a
person uses it: a version-3 bundle with no trust store, the right one, another CA's, and
an expired TSA certificate.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.proof.bundle import ProofBundle
from ledger.core.timestamps.bundle_part import Rfc3161Token, TimestampsPart
from ledger.core.timestamps.errors import TimestampError
from ledger.core.timestamps.rfc3161 import build_request, token_from_response, verify_token
from ledger.core.timestamps.tsa_chain import TsaTrust
from ledger.core.verify_page import render_verify_page
from tests.browser.test_verify_page import UI_STATE_JS, open_page
from tests.harness.tsa import TsaAuthority, issue_tsa, openssl_reply
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle

VECTORS = Path(__file__).parents[1] / "vectors" / "rfc3161"
MESSAGE_DIGEST = bytes(range(32))

VERIFY_JS = """
async (cases) => {
  const b = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  const out = [];
  for (const c of cases) {
    const trust = await NotaryX509.readTrustStore(b(c.trust), c.trustName);
    try {
      const v = await NotaryTsp.verifyToken(b(c.token), {digest: b(c.digest), hashName: c.hash, trust});
      out.push({check: null, tsa: v.tsa, genTime: v.genTime, serial: v.serial, trust: v.trust,
                fingerprint: v.fingerprint});
    } catch (e) {
      if (!(e instanceof NotaryTsp.TimestampError)) throw e;
      out.push({check: e.check, reason: e.reason});
    }
  }
  return out;
}
"""

STAMPS_JS = """
() => [...document.querySelectorAll("#timestamp-list li")].map((li) => ({
  status: li.dataset.status, text: li.querySelector(".text").textContent}))
"""


@dataclass(frozen=True)
class Vector:
    """One token checked by both sides: the DER token, the digest, the trust store PEM."""

    name: str
    token: bytes
    digest: bytes
    hash_name: str
    trust_pem: bytes
    trust_name: str

    def to_page(self) -> dict[str, str]:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        return {
            "token": b64(self.token),
            "digest": b64(self.digest),
            "hash": self.hash_name,
            "trust": b64(self.trust_pem),
            "trustName": self.trust_name,
        }

    def python(self) -> dict[str, Any]:
        trust = TsaTrust.from_pem(self.trust_pem, name=self.trust_name)
        try:
            v = verify_token(self.token, digest=self.digest, trust=trust, hash_name=self.hash_name)
        except TimestampError as exc:
            return {"check": int(exc.check)}
        return {"check": None, "tsa": v.tsa, "gen_time": v.gen_time, "serial": str(v.serial)}


def _public(name: str, anchor: str, hash_name: str, message: bytes, *, trust: str = "") -> Vector:
    data = (VECTORS / name).read_bytes()
    token = token_from_response(data) if name.endswith(".tsr") else data
    store = trust or anchor
    digest = hashlib.new(hash_name, message).digest()
    return Vector(name, token, digest, hash_name, (VECTORS / store).read_bytes(), store)


def _harness(authority: TsaAuthority, name: str, *, digest: bytes = MESSAGE_DIGEST) -> Vector:
    token = token_from_response(openssl_reply(authority, build_request(digest, nonce=7)))
    return Vector(name, token, digest, "sha256", authority.ca_file.read_bytes(), "harness-ca.pem")


PUBLIC_GOOD = [
    _public("globalsign-token.p7s", "globalsign-root.pem", "sha256", b"notation"),
    _public("identrust-issue-104.tsr", "identrust-root.pem", "sha512", b"hello"),
    _public("sigstage-response-sha384.tsr", "sigstage-root.pem", "sha384", b"hello"),
]


@pytest.fixture(scope="module")
def authorities(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TsaAuthority]:
    folder = tmp_path_factory.mktemp("tsa")
    return {
        "good": issue_tsa(folder / "good"),
        "other": issue_tsa(folder / "other", name="another TSA"),
        "expired": issue_tsa(folder / "expired", expired=True),
    }


def _vectors(authorities: dict[str, TsaAuthority]) -> list[Vector]:
    good = _harness(authorities["good"], "openssl TSA")
    other_ca = authorities["other"].ca_file.read_bytes()
    return [
        _public("globalsign-token.p7s", "globalsign-root.pem", "sha256", b"notation"),
        _public("identrust-issue-104.tsr", "identrust-root.pem", "sha512", b"hello"),
        _public("sigstage-response-sha256.tsr", "sigstage-root.pem", "sha256", b"hello"),
        _public("sigstage-response-sha384.tsr", "sigstage-root.pem", "sha384", b"hello"),
        _public("sigstage-response-invalid-signature.tsr", "sigstage-root.pem", "sha256", b"hello"),
        _public("globalsign-token.p7s", "globalsign-root.pem", "sha256", b"other"),
        _public("globalsign-token.p7s", "globalsign-root.pem", "sha384", b"notation"),
        _public("identrust-issue-104.tsr", "x", "sha512", b"hello", trust="globalsign-root.pem"),
        _public(
            "sigstage-response-sha256.tsr", "x", "sha256", b"hello", trust="identrust-root.pem"
        ),
        dataclasses.replace(
            _public("identrust-issue-104.tsr", "identrust-root.pem", "sha512", b"hello"),
            name="identrust, a store of two CAs",
            trust_pem=(VECTORS / "globalsign-root.pem").read_bytes()
            + (VECTORS / "identrust-root.pem").read_bytes(),
        ),
        good,
        dataclasses.replace(good, name="openssl TSA, other CA", trust_pem=other_ca),
        _harness(authorities["expired"], "openssl TSA, expired certificate"),
    ]


def _mutations(vectors: list[Vector]) -> list[Vector]:
    """Eight one-byte mutations (a bit flipped, fixed seed) of each verifying token."""
    out = []
    for v in vectors:
        for at in random.Random(v.name).sample(range(len(v.token)), 8):
            token = bytearray(v.token)
            token[at] ^= 0x01
            out.append(dataclasses.replace(v, name=f"{v.name} byte {at}", token=bytes(token)))
    return out


def _page_results(page: Any, vectors: list[Vector]) -> list[dict[str, Any]]:
    return list(page.evaluate(VERIFY_JS, [v.to_page() for v in vectors]))


@pytest.fixture
def blank_page(page: Any, tmp_path: Path) -> Any:
    (tmp_path / "verify.html").write_text(render_verify_page(), encoding="utf-8")
    open_page(page, (tmp_path / "verify.html").as_uri())
    return page


def test_python_and_the_page_agree_on_every_vector(
    blank_page: Any, authorities: dict[str, TsaAuthority]
) -> None:
    vectors = _vectors(authorities)
    shown = _page_results(blank_page, vectors)
    table = [(v.name, v.python(), s) for v, s in zip(vectors, shown, strict=True)]
    for name, python, js in table:
        assert js["check"] == python["check"], (name, python, js)
        if python["check"] is None:
            assert js["tsa"] == python["tsa"], name
            assert datetime.fromisoformat(js["genTime"]) == python["gen_time"], name
            assert js["serial"] == python["serial"], name
    outcomes = [python["check"] for _, python, _ in table]
    assert outcomes == [None, None, None, None, 7, 3, 3, 9, 9, None, None, 9, 9]
    assert blank_page.errors == []


def test_an_expired_tsa_certificate_is_judged_at_gen_time(blank_page: Any) -> None:
    """IdenTrust's TSA certificate ended in January 2026; its token of March 2025 holds."""
    vector = _public("identrust-issue-104.tsr", "identrust-root.pem", "sha512", b"hello")
    signer = _signer_certificate(vector.token, "TrustID Timestamp Authority")
    assert signer.not_valid_after_utc < datetime.now(UTC)
    [shown] = _page_results(blank_page, [vector])
    assert shown["check"] is None and shown["genTime"] == "2025-03-11T08:52:08Z"
    assert shown["trust"] == "identrust-root.pem"
    assert shown["fingerprint"] == hashlib.sha256(vector.trust_pem).hexdigest()


def test_one_byte_mutations_are_refused_by_both(
    blank_page: Any, authorities: dict[str, TsaAuthority]
) -> None:
    verifying = [v for v in _vectors(authorities) if v.python()["check"] is None]
    mutated = _mutations(verifying)
    shown = _page_results(blank_page, mutated)
    for vector, js in zip(mutated, shown, strict=True):
        assert js["check"] is not None, vector.name
        assert vector.python()["check"] is not None, vector.name
    assert len(mutated) == 8 * len(verifying) == 48


def _signer_certificate(token: bytes, common_name: str) -> x509.Certificate:
    from ledger.core.timestamps.bundle_part import token_certificates

    for der in token_certificates(token):
        cert = x509.load_der_x509_certificate(der)
        if common_name in cert.subject.rfc4514_string():
            return cert
    raise AssertionError(f"no certificate {common_name}")


# -- the page as a person uses it -------------------------------------------------------------


def _stamped_files(tmp_path: Path, authority: TsaAuthority) -> tuple[Forged, Path, Path]:
    forged = forge_bundle()
    keymr = forged.bundle.receipt.directory_block_keymr
    token = token_from_response(openssl_reply(authority, build_request(keymr, nonce=11)))
    part = TimestampsPart(keymr, (Rfc3161Token.of(token),))
    stamped = ProofBundle.loads(dataclasses.replace(forged.bundle, timestamps=part).dumps())
    (tmp_path / "report.txt").write_bytes(DOCUMENT)
    bundle = tmp_path / "report.txt.proof.json"
    bundle.write_text(stamped.dumps())
    page_file = tmp_path / "verify.html"
    page_file.write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    return forged, page_file, bundle


def _run(page: Any, page_file: Path, bundle: Path, trust: Path | None) -> dict[str, Any]:
    open_page(page, page_file.as_uri())
    if trust is not None:
        page.set_input_files("#tsa-trust-file", str(trust))
        page.wait_for_function(
            "() => !/no trust store/.test(document.getElementById('tsa-trust-summary').textContent)"
        )
    page.set_input_files("#bundle-input", str(bundle))
    page.set_input_files("#document-input", str(bundle.parent / "report.txt"))
    page.wait_for_selector("#result[data-state=done]")
    state = dict(page.evaluate(UI_STATE_JS))
    state["stamps"] = page.evaluate(STAMPS_JS)
    return state


def test_without_a_trust_store_tokens_are_present_not_checked(
    page: Any, tmp_path: Path, authorities: dict[str, TsaAuthority]
) -> None:
    _, page_file, bundle = _stamped_files(tmp_path, authorities["good"])
    shown = _run(page, page_file, bundle, None)
    assert shown["verdict"] == "pass"
    assert shown["stamps"] == [
        {"status": "not-checked", "text": "token 1: present, not checked: no trust store chosen"}
    ]
    assert "present, not checked (no trust store chosen)" in shown["detail"]
    assert page.errors == []


def test_with_the_issuing_ca_the_token_is_verified(
    page: Any, tmp_path: Path, authorities: dict[str, TsaAuthority]
) -> None:
    authority = authorities["good"]
    _, page_file, bundle = _stamped_files(tmp_path, authority)
    shown = _run(page, page_file, bundle, authority.ca_file)
    [stamp] = shown["stamps"]
    fingerprint = hashlib.sha256(authority.ca_file.read_bytes()).hexdigest()
    assert stamp["status"] == "verified"
    assert stamp["text"].startswith(f"token 1: verified: {authority.name} at 20")
    assert f"trusted by ca.pem (SHA-256 {fingerprint}); revocation not checked" in stamp["text"]
    assert "(serial " in stamp["text"]
    assert "1 verified, 0 failed under the trust store ca.pem" in shown["detail"]
    page.evaluate("() => document.activeElement.blur()")
    page.screenshot(path=str(tmp_path / "verify-page-tsa-verified.png"), full_page=True)
    assert page.errors == []


def test_another_ca_is_not_trusted_and_says_why(
    page: Any, tmp_path: Path, authorities: dict[str, TsaAuthority]
) -> None:
    _, page_file, bundle = _stamped_files(tmp_path, authorities["good"])
    other = tmp_path / "other-ca.pem"
    other.write_bytes(authorities["other"].ca_file.read_bytes())
    shown = _run(page, page_file, bundle, other)
    assert shown["stamps"] == [
        {
            "status": "not-trusted",
            "text": "token 1: not trusted: the path ends at CN=notary test CA, which the"
            " trust store 'other-ca.pem' lacks",
        }
    ]
    assert "a timestamp token failed" in shown["detail"]
    # As notary verify exits 1, the verdict is a failure though every step holds.
    assert shown["verdict"] == "fail", shown
    assert "but 1 independent timestamp failed" in shown["text"], shown
    page.evaluate("() => document.activeElement.blur()")
    page.screenshot(path=str(tmp_path / "verify-page-tsa-untrusted.png"), full_page=True)
    assert page.errors == []


def test_a_token_after_its_tsa_certificate_ended_is_not_trusted(
    page: Any, tmp_path: Path, authorities: dict[str, TsaAuthority]
) -> None:
    expired = authorities["expired"]
    _, page_file, bundle = _stamped_files(tmp_path, expired)
    [stamp] = _run(page, page_file, bundle, expired.ca_file)["stamps"]
    assert stamp["status"] == "not-trusted"
    assert ", not at the token's time " in stamp["text"]
    assert page.errors == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_one_byte_change_is_refused_by_both(blank_page: Any, data: st.DataObject) -> None:
    """Hypothesis: any byte of a public token set to any other value; the page refuses it
    with a numbered check (never another error), and so does Python."""
    vector = data.draw(st.sampled_from(PUBLIC_GOOD))
    at = data.draw(st.integers(0, len(vector.token) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != vector.token[at]))
    token = bytearray(vector.token)
    token[at] = value
    mutated = dataclasses.replace(vector, token=bytes(token))
    [shown] = _page_results(blank_page, [mutated])
    assert shown["check"] is not None and mutated.python()["check"] is not None


def test_a_file_that_is_no_trust_store_is_refused_with_its_reason(
    page: Any, tmp_path: Path, authorities: dict[str, TsaAuthority]
) -> None:
    _, page_file, bundle = _stamped_files(tmp_path, authorities["good"])
    open_page(page, page_file.as_uri())
    junk = tmp_path / "notes.pem"
    junk.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    page.set_input_files("#tsa-trust-file", str(junk))
    page.wait_for_selector("#tsa-trust-error:not([hidden])")
    error = page.text_content("#tsa-trust-error")
    assert error is not None and error.startswith("notes.pem is not a trust store: certificate 1")
    assert page.text_content("#tsa-trust-summary") == "no trust store chosen"
    assert page.errors == []


def test_a_section_over_another_root_fails_every_token(
    page: Any, tmp_path: Path, authorities: dict[str, TsaAuthority]
) -> None:
    """As ``check_timestamps``: a section whose ``root`` is not the KeyMR stamps another root."""
    authority = authorities["good"]
    _, page_file, bundle = _stamped_files(tmp_path, authority)
    obj = json.loads(bundle.read_text())
    obj["timestamps"]["root"] = "00" * 32
    bundle.write_text(json.dumps(obj))
    [stamp] = _run(page, page_file, bundle, authority.ca_file)["stamps"]
    assert stamp == {"status": "invalid", "text": "token 1: invalid: stamps another root"}
    assert page.errors == []
