"""A remote client of the bundled stack, run inside a network namespace by
``test_remote_bind.py``: what it gets from each service, printed as one JSON object.

Usage: ``python remote_probe.py HOST CA_FILE RPC_USER:RPC_PASSWORD API_KEY PORTS_JSON``
(``PORTS_JSON``: ``{"node": 8088, "wallet": ..., "anchor": ..., "api": ...}``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import httpx

#: A harmless method of each JSON-RPC service.
METHODS = {"node": "heights", "wallet": "properties", "anchor": "pow-info"}


def _status(call: Callable[..., httpx.Response], url: str, **kwargs: Any) -> int | str:
    """The HTTP status of ``call(url, **kwargs)``, or the name of the error that
    prevented one."""
    try:
        return call(url, **kwargs).status_code
    except httpx.HTTPError as exc:
        return type(exc).__name__


def _rpc_rows(
    tls: httpx.Client, plain: httpx.Client, base: str, clear: str, name: str, auth: tuple[str, str]
) -> dict[str, object]:
    ping = {"jsonrpc": "2.0", "id": 1, "method": METHODS[name]}
    return {
        "no credentials": _status(tls.post, f"{base}/v2", json=ping),
        "wrong password": _status(tls.post, f"{base}/v2", json=ping, auth=(auth[0], "guess")),
        "credentials": _status(tls.post, f"{base}/v2", json=ping, auth=auth),
        "plain http": _status(plain.post, f"{clear}/v2", json=ping, auth=auth),
    }


def _api_rows(
    tls: httpx.Client, plain: httpx.Client, base: str, clear: str, key: str
) -> dict[str, object]:
    return {
        "no key": _status(tls.get, f"{base}/v1/chains"),
        "wrong key": _status(tls.get, f"{base}/v1/chains", headers={"user-key": "guess"}),
        "key": _status(tls.get, f"{base}/v1/chains", headers={"user-key": key}),
        "plain http": _status(plain.get, f"{clear}/v1/chains", headers={"user-key": key}),
    }


def probe(
    host: str, ca_file: str, credentials: str, api_key: str, ports: dict[str, int]
) -> dict[str, Any]:
    """Each service's answers (module docstring)."""
    user, _, password = credentials.partition(":")
    out: dict[str, Any] = {}
    with httpx.Client(verify=ca_file, timeout=10) as tls, httpx.Client(timeout=10) as plain:
        for name, port in ports.items():
            base, clear = f"https://{host}:{port}", f"http://{host}:{port}"
            ready = tls.get(f"{base}/health/ready")
            row: dict[str, object] = {"ready": ready.status_code, "ready_body": ready.json()}
            if name == "api":
                row |= _api_rows(tls, plain, base, clear, api_key)
            else:
                row |= _rpc_rows(tls, plain, base, clear, name, (user, password))
            row["untrusted certificate"] = _status(httpx.get, f"{base}/health/ready", timeout=10)
            out[name] = row
    return out


if __name__ == "__main__":
    host, ca, creds, key, ports = sys.argv[1:6]
    print(json.dumps(probe(host, ca, creds, key, json.loads(ports)), sort_keys=True))
