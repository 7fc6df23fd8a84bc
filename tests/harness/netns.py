"""A second machine on a wire: a Linux network namespace joined to this one by a veth pair.

``network_namespace()`` makes a namespace with a veth pair: this side gets
``10.R.S.1/30``, the namespace's side ``10.R.S.2/30`` (``R``, ``S`` random), both up, and
the namespace's loopback up. A process run with ``Netns.run`` (``ip netns exec``) sees
this machine only at ``host_address``, as a remote client would: the services' loopback
ports are out of its reach. Everything is removed at exit (deleting the namespace
deletes the pair).

Needs root and ``ip`` (Debian's ``iproute2``, installed with ``apt-get`` when missing);
when the namespace cannot be made, the caller skips, except under ``CI=true``, where it
fails: CI must run these tests.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

__all__ = ["Netns", "network_namespace"]


@dataclass(frozen=True)
class Netns:
    """A namespace: its ``name``, this machine's address seen from it (``host_address``)
    and its own (``address``)."""

    name: str
    host_address: str
    address: str

    def run(
        self, argv: Sequence[str], *, timeout_s: float = 60, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the namespace; its completed process (text output)."""
        return subprocess.run(
            ["ip", "netns", "exec", self.name, *argv],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"network namespaces are needed in CI: {reason}")
    pytest.skip(f"no network namespace here: {reason}")


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _ensure_ip() -> None:
    if shutil.which("ip") is not None:
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "iproute2"]):
        subprocess.run(command, env=env, capture_output=True, timeout=600, check=False)


@contextlib.contextmanager
def network_namespace() -> Iterator[Netns]:
    """A fresh namespace wired to this one (module docstring); removed at exit."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        _unavailable("not running as root")
    _ensure_ip()
    if shutil.which("ip") is None:
        _unavailable("no `ip` command (Debian's iproute2)")
    tag = secrets.token_hex(3)
    name, here, there = f"notary-{tag}", f"nv{tag}a", f"nv{tag}b"
    r, s = 200 + secrets.randbelow(50), secrets.randbelow(64) * 4
    net = Netns(name, f"10.{r}.{s}.1", f"10.{r}.{s}.2")
    try:
        _ip("netns", "add", name)
    except RuntimeError as exc:
        _unavailable(str(exc))
    try:
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        _ip("link", "set", there, "netns", name)
        _ip("addr", "add", f"{net.host_address}/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("netns", "exec", name, "ip", "addr", "add", f"{net.address}/30", "dev", there)
        _ip("netns", "exec", name, "ip", "link", "set", there, "up")
        _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield net
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30, check=False)
        subprocess.run(["ip", "link", "del", here], capture_output=True, timeout=30, check=False)
