"""``GET /verify``: the verification page, served to anyone, with its CSP as a header."""

from __future__ import annotations

from ledger.core.verify_page import content_security_policy, render_verify_page
from tests.ledger.api.conftest import Api


def test_the_page_is_served_without_a_key(api: Api) -> None:
    response = api.client.get("/verify")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.text == render_verify_page()
    csp = response.headers["content-security-policy"]
    assert csp == content_security_policy()
    assert f'content="{csp}"' in response.text.replace("&#x27;", "'")
    assert "connect-src 'none'" in csp and "default-src 'none'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_the_page_opens_no_door_to_the_api(api: Api) -> None:
    assert api.client.get("/v1/chains").status_code == 403  # the key is still needed there
    assert api.client.post("/verify", json={}).status_code in (404, 405)
    assert api.get("/v1/openapi.json").status_code == 200
    assert "/verify" not in api.get("/v1/openapi.json").json()["paths"]
