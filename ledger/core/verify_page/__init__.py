"""The verification page: one self-contained HTML file that checks a proof bundle offline.

A person opens the page (a file on disk, or ``GET /verify`` of the publishing API), drops
a document and its proof bundle (``docs/proof-bundle.md``), and sees every step of
``notary verify`` with what it checked and a verdict. The file is hashed in the browser
(Web Crypto, or the inlined ``@noble/hashes`` streaming SHA-256 for large files) and the
steps are the JavaScript twins of ``ledger.core.proof.verify.verify_bundle``: same numbers,
titles, reasons and details.

The page makes no network request: every script and style is inline, and its
Content-Security-Policy (``content_security_policy()``, in a ``<meta>`` tag and, where a
server sends the page, in the response header) allows only those exact scripts and
styles (by SHA-256) and no connection, form target or base URL.

Assets (this package's data files)::

    page.html, page.css           the document and its style
    vendor/noble-hashes.min.js    SHA-256 / SHA-512 / scrypt, and SHA-1 / RIPEMD-160 / Keccak-256
                                  for OpenTimestamps ops (@noble/hashes, MIT; vendor/build.sh)
    pyjson.js                     JSON read as Python's json.loads reads it; repr()
    codecs.js                     entry, directory block, transaction, header, Merkle rules
    verify.js                     step 0, the trust policies, the version registry, the run,
                                  the verdict's wording
    bundle_v1.js                  bundle version 1: its parser and steps 1-11 (2-3 skipped)
    bundle_v2.js                  bundle version 2: its parser and steps 2-4 (commitment,
                                  aggregation, entry); version 1's checks for the rest
    der.js                        a strict DER reader (X.690)
    x509.js                       X.509 certificates, signatures by Web Crypto, trust stores
    tsp.js                        RFC 3161 tokens: the checks of ledger.core.timestamps.rfc3161
    ots.js                        OpenTimestamps: the .ots reader, the walk, Bitcoin headers
    bundle_v3.js                  bundle version 3: version 1 or 2 plus RFC 3161 tokens,
                                  checked after the steps against a chosen trust store,
                                  and OpenTimestamps stamps (``timestamps.opentimestamps``)
    stamps_ui.js                  the trust store picker and the timestamps panel
    verdict_ui.js                 the verdict box: pass, partial or fail, and why
    ui.js                         files in, hashing with progress, steps and verdict out

Pure: reading the package's own files is its only I/O.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.checkpoints import Checkpoints
from ledger.core.proof.policy import SHIPPED, TrustPolicy

__all__ = ["DEFAULT_TITLE", "IN_MEMORY_MAX_BYTES", "content_security_policy", "render_verify_page"]

DEFAULT_TITLE = "Verify a notarized document"
#: Files up to this size are read whole and hashed by Web Crypto; larger ones are streamed.
IN_MEMORY_MAX_BYTES = 256 << 20
#: The scripts, in the order the page runs them.
_SCRIPTS = (
    "vendor/noble-hashes.min.js",
    "pyjson.js",
    "codecs.js",
    "verify.js",
    "bundle_v1.js",
    "bundle_v2.js",
    "der.js",
    "x509.js",
    "tsp.js",
    "ots.js",
    "bundle_v3.js",
    "stamps_ui.js",
    "verdict_ui.js",
    "ui.js",
)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_SCRIPT_CLOSE = re.compile(r"</script|<!--", re.IGNORECASE)


@dataclass(frozen=True)
class _Assets:
    template: str
    style: str
    scripts: tuple[str, ...]
    csp: str


def _source_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


@cache
def _assets() -> _Assets:
    folder = resources.files(__name__)

    def read(name: str) -> str:
        return folder.joinpath(name).read_text(encoding="utf-8")

    style = read("page.css")
    scripts = tuple(read(name) for name in _SCRIPTS)
    for name, text in zip(("page.css", *_SCRIPTS), (style, *scripts), strict=True):
        if _SCRIPT_CLOSE.search(text) or "</style" in text.lower():
            raise RuntimeError(f"verify page asset {name} would end its inline element early")
    csp = "; ".join(
        [
            "default-src 'none'",
            "script-src " + " ".join(_source_hash(s) for s in scripts),
            f"style-src {_source_hash(style)}",
            "img-src data:",
            "connect-src 'none'",
            "form-action 'none'",
            "base-uri 'none'",
        ]
    )
    return _Assets(read("page.html"), style, scripts, csp)


def content_security_policy() -> str:
    """The page's Content-Security-Policy (the same for every page rendered).

    ``default-src 'none'`` with the inline scripts and the style allowed by their SHA-256,
    ``data:`` images (the icon), and no connection, form target or base URL: the browser
    itself keeps the page from sending anything anywhere. The embedded bundle and the
    configuration are JSON data blocks, which CSP does not govern (they never run).
    """
    return _assets().csp


def render_verify_page(
    bundle: Mapping[str, Any] | ProofBundle | None = None,
    *,
    policy: TrustPolicy | None = None,
    title: str = DEFAULT_TITLE,
) -> str:
    """The verification page, optionally carrying one bundle (then only the file is dropped).

    Args:
        bundle: a proof bundle (``ProofBundle`` or its JSON object) to build into the page;
            it is embedded as given, not checked here: the page checks it.
        policy: the trust policy the page starts with; None: the shipped policy the
            bundle's ``anchor.chain`` names, which the page states was assumed. The
            policy panel offers every shipped policy (``ledger.core.proof.policy``) and this
            one; the person chooses. The checkpoint sets these policies name (``ledger.core.proof.checkpoints``)
            are carried too, for placing OpenTimestamps headers (``ots.js``).
        title: the page's title and heading.

    Returns:
        The HTML text (UTF-8 when written to a file); no network resource is referenced.
    """
    assets = _assets()
    policies = dict(SHIPPED)
    if policy is not None:
        policies[policy.name] = policy
    config = {
        "policies": [p.to_json() for p in policies.values()],
        "policy": None if policy is None else policy.name,
        "inMemoryMaxBytes": IN_MEMORY_MAX_BYTES,
        "checkpoints": _checkpoint_sets(policies.values()),
    }
    values = {
        "csp": html.escape(assets.csp),
        "title": html.escape(title),
        "style": assets.style,
        "config": _json_for_script(config),
        "bundle": _json_for_script(bundle.to_json() if isinstance(bundle, ProofBundle) else bundle),
        "scripts": "\n".join(f"<script>{text}</script>" for text in assets.scripts),
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], assets.template)


def _checkpoint_sets(policies: Iterable[TrustPolicy]) -> dict[str, dict[str, Any]]:
    """The checkpoint sets the offered policies name, as ots.js ``readCheckpoints`` reads
    them: the first height and base64 of one 40-byte record per difficulty period (block
    hash in internal order, then ``bits`` and time as little-endian uint32). The sets were
    checked when loaded (``ledger.core.proof.checkpoints``)."""
    sets: dict[str, dict[str, Any]] = {}
    for policy in policies:
        found: Checkpoints | None = policy.checkpoints
        if found is None or found.name in sets or not found.entries:
            continue
        records = b"".join(
            c.hash + c.header.bits.to_bytes(4, "little") + c.header.timestamp.to_bytes(4, "little")
            for c in found.entries
        )
        sets[found.name] = {
            "first": found.entries[0].height,
            "records": base64.b64encode(records).decode("ascii"),
        }
    return sets


def _json_for_script(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: ASCII, and no ``<``, ``>`` or
    ``&`` (escaped as ``\\u003c`` and so on, which only a JSON string can hold)."""
    text = json.dumps(value, ensure_ascii=True, default=_mapping)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _mapping(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot embed a {type(value).__name__} in a proof bundle")
