"""The node's JSON-RPC methods, one module per group; ``build_registry`` binds them to a service."""

from __future__ import annotations

from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.handlers import anchors, balances, blocks, entries, status, transactions, write
from ledger.node.service import NodeService


def build_registry(service: NodeService) -> MethodRegistry:
    """Every node method of docs/jsonrpc.md §4 (and factomd's aliases), bound to ``service``."""
    registry = MethodRegistry()
    for group in (status, balances, write, entries, blocks, transactions, anchors):
        group.register(registry, service)
    return registry
