"""How the audit store keeps a receipt's raw object: its Merkle branch stored once.

A receipt row has the branch in its ``merkle_branch`` column and the node's whole receipt
object in ``raw``, and the branch was ~half of each: ~4 KB of JSON twice per entry, most
of what the ledger stage wrote (writing it took ~30 % of the audit store's CPU for a
receipt). ``raw`` now keeps, in place of the branch, the SHA-256 of the branch *as it was
in the raw object* (``{"sha256": hex}``; ``stored_raw``), and reading puts the column's
branch back when it has that digest (``received_raw``). A column that was changed after
the receipt was stored no longer matches: the raw object is then read with the digest in
place of the branch, so the audit report's check of the columns against the raw receipt
(``tasks.report``) still finds the difference, and verification rejects the receipt.

Rows written before migration 0006 (``raw`` holding the list) read as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

__all__ = ["branch_digest", "received_raw", "stored_raw"]

_BRANCH = "merklebranch"
_DIGEST = "sha256"


def branch_digest(branch: Sequence[Mapping[str, Any]]) -> str:
    """Hex SHA-256 of the branch's canonical JSON (keys sorted, no spaces: the same on
    SQLite's JSON and PostgreSQL's JSONB, which reorders keys).

    Raises:
        TypeError: a value JSON cannot hold.
    """
    return hashlib.sha256(orjson.dumps(list(branch), option=orjson.OPT_SORT_KEYS)).hexdigest()


def stored_raw(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` as the ``raw`` column keeps it: a ``merklebranch`` list replaced, in place,
    by ``{"sha256": its digest}``; anything else unchanged (a copy)."""
    out = dict(raw)
    branch = out.get(_BRANCH)
    if isinstance(branch, list):
        out[_BRANCH] = {_DIGEST: branch_digest(branch)}
    return out


def received_raw(raw: Mapping[str, Any], branch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The raw object as received, from the ``raw`` column and the ``merkle_branch``
    column: the digest replaced by ``branch`` (copied, at the same key) when ``branch``
    has that digest; otherwise ``raw`` as stored (a copy), digest and all."""
    out = dict(raw)
    kept = out.get(_BRANCH)
    if isinstance(kept, Mapping) and set(kept) == {_DIGEST}:
        try:
            same = kept[_DIGEST] == branch_digest(branch)
        except TypeError:
            same = False
        if same:
            out[_BRANCH] = [dict(node) for node in branch]
    return out
