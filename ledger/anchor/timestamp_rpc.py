"""The anchoring service's ``anchor-timestamps`` method: the RFC 3161 tokens of a block.

=================  ==========================  ============================================
method             params                      result
=================  ==========================  ============================================
anchor-timestamps  height (directory block)    directoryblockheight, keymr (the root
                                               stamped; null when none), rfc3161 (list of
                                               tsa, token (DER, base64), gentime, serial,
                                               subject), waiting (list of tsa, attempts,
                                               lasterror)
=================  ==========================  ============================================

``tsa`` is the authority's URL without credentials. A token listed here was verified
(``ledger.anchor.timestamping``) before it was stored; a verifier checks it again against
its own trust store. ``waiting`` lists the TSAs still without a token for the block.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ledger.anchor.timestamp_store import TimestampStore
from ledger.anchor.timestamping import public_url
from ledger.jsonrpc.registry import MethodRegistry

__all__ = ["register_timestamp_methods"]


class _HeightParams(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    height: int = Field(ge=0)


def register_timestamp_methods(registry: MethodRegistry, store: TimestampStore) -> None:
    """Add ``anchor-timestamps`` (module docstring) to ``registry``."""

    @registry.method("anchor-timestamps", params=_HeightParams, blocking=False)
    def anchor_timestamps(params: _HeightParams) -> dict[str, Any]:
        tokens = store.tokens(params.height)
        waiting = store.waiting(height=params.height)
        keymrs = [t.keymr for t in tokens] + [w.keymr for w in waiting]
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
        }
