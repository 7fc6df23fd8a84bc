"""Status methods: properties, heights, current-minute, entry-credit-rate, diagnostics, tps-rate,
authorities.

``leaderheight`` is one rule everywhere (``heights``, ``current-minute``, ``diagnostics``):
the saved height, one more in minute 0 of a block (spec "heights": a synced node shows the
same number for all heights except between minute 0 and 1).
"""

from __future__ import annotations

from typing import Any

from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.service import NodeService

NODE_VERSION = "0.1.0"
API_VERSION = "2.0"
_NO_HASH = "00" * 32


def leader_height(service: NodeService) -> int:
    """The leader height of ``heights``: the saved height, one more in minute 0."""
    saved = service.tip.height
    return saved + 1 if service.process_list.minute == 0 else saved


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add the status methods, bound to ``service``, to ``registry``."""

    @registry.method("properties", blocking=False)
    def properties() -> dict[str, Any]:
        # factomd's names are kept beside the neutral ones (docs/jsonrpc.md §9) so that
        # existing clients work.
        return {
            "nodeversion": NODE_VERSION,
            "nodeapiversion": API_VERSION,
            "factomdversion": NODE_VERSION,
            "factomdapiversion": API_VERSION,
        }

    @registry.method("heights", blocking=False)
    def heights() -> dict[str, Any]:
        saved = service.tip.height
        return {
            "directoryblockheight": saved,
            "leaderheight": leader_height(service),
            "entryblockheight": saved,
            "entryheight": saved,
        }

    @registry.method("current-minute", blocking=False)
    def current_minute() -> dict[str, Any]:
        pl = service.process_list
        now = service.clock.now()
        minute_start = pl.start_s + min(pl.minute, 9) * service.minute_s
        return {
            "leaderheight": leader_height(service),
            "directoryblockheight": service.tip.height,
            "minute": pl.minute,
            "currentblockstarttime": int(pl.start_s * 1e9),
            "currentminutestarttime": int(minute_start * 1e9),
            "currenttime": int(now * 1e9),
            "directoryblockinseconds": int(service.settings.block_time_s),
            "stalldetected": now > pl.start_s + 2 * service.settings.block_time_s,
            "faulttimeout": 120,
            "roundtimeout": 30,
        }

    @registry.method("entry-credit-rate", blocking=False)
    def entry_credit_rate() -> dict[str, Any]:
        return {"rate": service.settings.ec_rate}

    @registry.method("tps-rate", blocking=False)
    def tps_rate() -> dict[str, Any]:
        # total: reveals accepted per second since the node started; instant: in this block
        now = service.clock.now()
        total = service.accepted_entries / max(1e-9, now - service.started_at_s)
        pl = service.process_list
        instant = len(pl.entries) / max(1e-9, now - pl.start_s)
        return {"totaltxrate": total, "instanttxrate": instant}

    @registry.method("diagnostics", blocking=False)
    def diagnostics() -> dict[str, Any]:
        return _diagnostics(service)

    @registry.method("authorities", blocking=False)
    def authorities() -> dict[str, Any]:
        return {"authorities": [_authority(service)]}


def _authority(service: NodeService) -> dict[str, Any]:
    """The one authority of this network, in factomd's JSON form of an authority.

    The node is the only (federated) server; it has no management chain, Matryoshka hash
    or anchor keys, so those are the zero hash and an empty list.
    """
    identity = service.identity_hex()
    return {
        "chainid": identity["chain_id"],
        "manageid": _NO_HASH,
        "matroyshka": _NO_HASH,
        "signingkey": identity["public_key"],
        "status": "federated",
        "anchorkeys": [],
    }


def _diagnostics(service: NodeService) -> dict[str, Any]:
    pl = service.process_list
    identity = service.identity_hex()
    minute_s = service.minute_s
    return {
        "name": service.settings.node_name,
        "id": identity["chain_id"],
        "publickey": identity["public_key"],
        "role": "Leader",
        "leaderheight": leader_height(service),
        "currentheight": service.tip.height,
        "currentminute": pl.minute,
        "currentminuteduration": minute_s,
        "previousminuteduration": minute_s,
        "balancehash": service.balance_hash().hex(),
        "tempbalancehash": service.balance_hash(temporary=True).hex(),
        "lastblockfromdbstate": False,
        "syncing": {"status": "Processing", "received": 1, "expected": 1, "missing": []},
        "authset": {
            "leaders": [
                {
                    "id": identity["chain_id"],
                    "vm": 0,
                    "listheight": len(pl.ec_objects),
                    "listlength": len(pl.ec_objects),
                    "nextnil": 0,
                }
            ],
            "audits": [],
        },
        "elections": {"inprogress": False},
    }
