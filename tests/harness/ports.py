"""Free loopback ports for servers that tests start."""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

__all__ = ["free_port"]

# Ports handed out by this process: a port given to a service that is down for a while
# (killed, not yet restarted) must not be handed to another one meanwhile.
_handed_out: set[int] = set()
_lock = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of ``host`` that nothing is bound to now, below the ephemeral range.

    Ports of the kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``)
    are avoided: while a killed service is down, an outgoing connection of any process
    could be given its port, and the restart would fail with "address in use". Ports
    handed out before by this process are never handed out again.

    Raises:
        RuntimeError: no free port was found in 500 tries.
    """
    low = _ephemeral_low()
    rng = random.SystemRandom()
    with _lock:
        for _ in range(500):
            port = rng.randrange(max(1024, low - 12_000), low)
            if port in _handed_out or not _bindable(host, port):
                continue
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port below {low} on {host}")


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default lower bound
