"""The anchoring service's ``anchor-timestamps`` method: the RFC 3161 tokens and the
OpenTimestamps proof of a block.

=================  ==========================  ============================================
method             params                      result
=================  ==========================  ============================================
anchor-timestamps  height (directory block)    directoryblockheight, keymr (the root
                                               stamped; null when none), rfc3161 (list of
                                               tsa, token (DER, base64), gentime, serial,
                                               subject), waiting (list of tsa, attempts,
                                               lasterror), opentimestamps (list of ots
                                               (.ots, base64), headers (80-byte Bitcoin
                                               headers, hex)), otsstatus (state,
                                               bitcoinheights, calendars, attempts,
                                               lasterror; null when not stamped), final
                                               (every configured TSA and calendar done)
=================  ==========================  ============================================

``tsa`` is the authority's URL without credentials. A token listed here was verified
(``ledger.anchor.timestamping``) before it was stored; a verifier checks it again against
its own trust store. ``waiting`` lists the TSAs still without a token for the block.

``opentimestamps`` has the shape of the bundle's ``timestamps.opentimestamps``
(docs/proof-bundle.md, "Version 3"): one element, the calendars' answers merged into one
``.ots``, once at least ``ots_min`` calendars answered (``ledger.anchor.ots_stamping``);
empty before. ``otsstatus.state`` is ``submitting``, ``pending`` or ``complete`` (a Bitcoin
attestation and, from a configured header source, its headers); ``bitcoinheights`` lists
the attested Bitcoin block heights; ``calendars`` the calendars whose answers are merged.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ledger.anchor.ots_calendar import bitcoin_points
from ledger.anchor.ots_store import OtsRow, OtsStore
from ledger.anchor.timestamp_store import TimestampStore
from ledger.anchor.timestamping import public_url
from ledger.core.timestamps.ots import parse_ots
from ledger.jsonrpc.registry import MethodRegistry

__all__ = ["register_timestamp_methods"]


class _HeightParams(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    height: int = Field(ge=0)


def _ots_answer(row: OtsRow | None) -> dict[str, Any]:
    if row is None:
        return {"opentimestamps": [], "otsstatus": None}
    stamps = []
    if row.state != "submitting" and row.ots is not None:
        stamps.append(
            {
                "ots": base64.b64encode(row.ots).decode(),
                "headers": [h.hex() for h in row.headers],
            }
        )
    ots = None if row.ots is None else parse_ots(row.ots)
    heights = [] if ots is None else [h for h, _ in bitcoin_points(ots.timestamp)]
    status = {
        "state": row.state,
        "bitcoinheights": heights,
        "calendars": [public_url(c) for c in row.answered],
        "attempts": row.attempts,
        "lasterror": row.last_error,
    }
    return {"opentimestamps": stamps, "otsstatus": status}


def register_timestamp_methods(
    registry: MethodRegistry,
    store: TimestampStore,
    ots: OtsStore,
    *,
    tsas: int = 0,
    calendars: bool = False,
) -> None:
    """Add ``anchor-timestamps`` (module docstring) to ``registry``: tokens from ``store``,
    OpenTimestamps proofs from ``ots``; ``tsas`` (how many TSAs are configured) and
    ``calendars`` (whether calendars are) decide ``final``."""

    @registry.method("anchor-timestamps", params=_HeightParams, blocking=False)
    def anchor_timestamps(params: _HeightParams) -> dict[str, Any]:
        tokens = store.tokens(params.height)
        waiting = store.waiting(height=params.height)
        proof = ots.get(params.height)
        keymrs = [t.keymr for t in tokens] + [w.keymr for w in waiting]
        keymrs += [] if proof is None else [proof.keymr]
        return {
            "directoryblockheight": params.height,
            "keymr": keymrs[0].hex() if keymrs else None,
            "rfc3161": [
                {
                    "tsa": public_url(t.tsa),
                    "token": base64.b64encode(t.token).decode(),
                    "gentime": t.gen_time,
                    "serial": t.serial,
                    "subject": t.subject,
                }
                for t in tokens
            ],
            "waiting": [
                {"tsa": public_url(w.tsa), "attempts": w.attempts, "lasterror": w.last_error}
                for w in waiting
            ],
            **_ots_answer(proof),
            "final": (tsas == 0 or len(tokens) >= tsas)
            and (not calendars or (proof is not None and proof.state == "complete")),
        }
