"""The verification page as text: self-contained, its CSP matching its scripts, a bundle
embedded safely. (Its behaviour is tested in a browser: tests/browser/.)"""

from __future__ import annotations

import base64
import hashlib
import json
import re

from ledger.core.pow.params import PowParams
from ledger.core.proof.policy import SHIPPED
from ledger.core.verify_page import (
    DEFAULT_TITLE,
    content_security_policy,
    render_verify_page,
)
from tests.ledger.anchor.bundles import forge_bundle, policy_of

SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)


def source_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def json_block(html: str, block_id: str) -> object:
    text = html.split(f'id="{block_id}">', 1)[1].split("</script>", 1)[0]
    return json.loads(text)


def test_the_csp_allows_exactly_the_inline_scripts_and_style() -> None:
    html = render_verify_page()
    csp = content_security_policy()
    directives = dict(d.split(" ", 1) for d in csp.split("; "))
    scripts = SCRIPT.findall(html)
    assert len(scripts) == 14
    assert directives["script-src"].split() == [source_hash(s) for s in scripts]
    assert directives["style-src"] == source_hash(STYLE.findall(html)[0])
    assert directives["default-src"] == directives["connect-src"] == "'none'"
    assert directives["form-action"] == directives["base-uri"] == "'none'"
    assert "unsafe" not in csp


def test_the_page_names_no_outside_resource() -> None:
    html = render_verify_page()
    assert "{{" not in html and f"<title>{DEFAULT_TITLE}</title>" in html
    references = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', html)
    assert references and all(r.startswith(("#", "data:")) for r in references), references
    assert "@import" not in html and "url(" not in STYLE.findall(html)[0]


def test_an_embedded_bundle_is_inert_and_read_back_exactly() -> None:
    bundle = forge_bundle().bundle.to_json()
    bundle["anchor"]["chain"] = "</script><script>alert(1)</script><!-- & \u2028 é"
    html = render_verify_page(bundle, title="<b>x</b>")
    assert html.count("</script>") == 16  # 2 JSON blocks + 14 scripts: nothing closes early
    assert "<!--" not in html.split("<body>", 1)[1]
    assert json_block(html, "notary-embedded-bundle") == bundle
    assert "<title>&lt;b&gt;x&lt;/b&gt;</title>" in html


def test_without_a_bundle_the_block_is_null_and_the_policy_is_the_one_given() -> None:
    given = policy_of(PowParams("other-chain", 20, 6), name="other")
    html = render_verify_page(policy=given)
    assert json_block(html, "notary-embedded-bundle") is None
    config = json_block(html, "notary-page-config")
    assert isinstance(config, dict)
    assert config["policy"] == "other"
    assert config["policies"] == [p.to_json() for p in SHIPPED.values()] + [given.to_json()]
    unchosen = json_block(render_verify_page(), "notary-page-config")
    assert isinstance(unchosen, dict) and unchosen["policy"] is None


def test_a_proof_bundle_object_embeds_as_its_json() -> None:
    forged = forge_bundle()
    html = render_verify_page(forged.bundle)
    assert json_block(html, "notary-embedded-bundle") == forged.bundle.to_json()


def test_exported_members_exist_and_are_listed_once() -> None:
    import ledger.core.verify_page as module

    assert len(module.__all__) == len(set(module.__all__))
    assert [name for name in module.__all__ if not hasattr(module, name)] == []
    assert {"render_verify_page", "content_security_policy"} <= set(module.__all__)
