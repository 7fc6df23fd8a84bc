"""``GET /verify``: the proof verification page, for anyone, with no key.

The page (``ledger.core.verify_page``) checks a file against its proof bundle inside the
browser: nothing is uploaded, and the page cannot send anything back (its
Content-Security-Policy, sent here as a response header too, forbids every connection).
It sits outside ``/v1`` and outside the OpenAPI document: it is a page for people, not an
operation of the publishing API.
"""

from __future__ import annotations

from functools import cache

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from ledger.core.verify_page import content_security_policy, render_verify_page

__all__ = ["VERIFY_PAGE_PATH", "router"]

VERIFY_PAGE_PATH = "/verify"

router = APIRouter()


@cache
def _page() -> str:
    return render_verify_page()


@router.get(VERIFY_PAGE_PATH, include_in_schema=False, response_class=HTMLResponse)
async def get_verify_page() -> HTMLResponse:
    """The verification page (``text/html``), with its CSP as a header as well."""
    return HTMLResponse(
        _page(),
        headers={
            "content-security-policy": content_security_policy(),
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "cache-control": "no-cache",
        },
    )
