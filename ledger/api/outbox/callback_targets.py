"""Callback target rules: which URLs a write may ask callbacks to, and which hosts they reach.

Callback URLs must be ``http``/``https`` ASCII URLs (RFC 3986; international host names
in their ``xn--`` form) with a valid host name or address; hosts that are (or resolve to) loopback,
private, link-local, multicast, reserved or unspecified addresses are refused unless
listed in ``callback_allowed_hosts`` (host name, IP address or CIDR network, with or
without a port: ``127.0.0.1:8092`` allows that port only). Every spelling of an address is
checked as the address (decimal, hex, short IPv4 forms, IPv4-mapped IPv6: ``HostPolicy``).
Literal addresses and ``localhost`` names are refused at acceptance (HTTP 422, the reason
naming the rule); other names are resolved and checked again before every delivery.

``check_callback_url`` applies the rules at acceptance (``ledger.api.http.writes``);
``CallbackDispatcher`` (``ledger.api.outbox.callbacks``) asks ``refusal_at_delivery``
before every POST.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from ledger.api.errors import LedgerApiError

__all__ = ["CallbackRefused", "HostPolicy", "IpAddress", "Resolver", "check_callback_url"]

_MAX_URL_CHARS = 2048
#: Printable ASCII without spaces: the characters an RFC 3986 URI may contain.
_URL_CHARS = re.compile(r"[!-~]+")
_HOST_NAME = re.compile(
    r"(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?"
)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], list[str]]


class CallbackRefused(LedgerApiError, ValueError):
    """A callback URL that may not be used. Attributes: ``url``, ``reason``."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"callback_url refused: {reason}")
        self.url = url
        self.reason = reason


def _resolve(host: str) -> list[str]:
    """Every address ``host`` resolves to (system resolver)."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]) for info in infos})


class HostPolicy:
    """Which callback targets may be reached (docs/rest-api.md §6, docs/security.md).

    The rule: a callback goes only to a public (globally routable, not multicast) address,
    or to one of the ``allowed`` targets. Every spelling of an address counts as that
    address: the legacy IPv4 forms that resolvers accept (decimal ``2130706433``, hex
    ``0x7f000001``, short ``127.1``, octal parts) and IPv4-mapped IPv6 (``::ffff:127.0.0.1``)
    are checked as the IPv4 address they name; host names are resolved and every address
    they give is checked before each delivery.

    Args:
        allowed: targets permitted although private or loopback: a host name, an IP address
            or a CIDR network (any port), or one of those with a port (``127.0.0.1:8092``,
            ``[::1]:8092``, ``collector.internal:8092``: that port only).
        resolver: host name -> addresses (default: the system resolver).
    """

    def __init__(self, allowed: Sequence[str] = (), *, resolver: Resolver | None = None) -> None:
        self._names: dict[str, int | None] = {}
        self._networks: list[tuple[IpNetwork, int | None]] = []
        for target in allowed:
            host, port = _split_target(target)
            if _is_network(host):
                self._networks.append((ipaddress.ip_network(host.strip("[]"), strict=False), port))
            else:
                self._names[host.lower()] = port
        self._allowed_text = ", ".join(allowed) or "none"
        self._resolve = resolver or _resolve

    def refusal_at_acceptance(self, url: str) -> str | None:
        """Why ``url`` is refused without DNS look-ups, or ``None`` when acceptable."""
        if len(url) > _MAX_URL_CHARS or not _URL_CHARS.fullmatch(url):
            return f"must be an ASCII URL (RFC 3986) of at most {_MAX_URL_CHARS} characters"
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            return "has an invalid port"
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return "must be an absolute http or https URL"
        port = port or _DEFAULT_PORTS[parts.scheme]
        host = parts.hostname.lower()
        address = _as_ip(host)
        if address is None and (_LEGACY_IPV4.fullmatch(host) or not _HOST_NAME.fullmatch(host)):
            return f"host {host[:80]!r} is not a valid host name or address"
        if address is None and self._name_allowed(host, port):
            return None
        if host == "localhost" or host.endswith(".localhost"):
            return self._rule(f"host {host} is a loopback name")
        if address is not None and not self._address_allowed(address, port):
            return self._rule(f"address {address} ({host}) is {_kind(address)}")
        return None

    def refusal_at_delivery(self, url: str) -> str | None:
        """Like ``refusal_at_acceptance`` plus a resolution of host names."""
        reason = self.refusal_at_acceptance(url)
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
        if reason is not None or self._name_allowed(host, port) or _as_ip(host) is not None:
            return reason
        try:
            addresses = [
                _unmapped(ipaddress.ip_address(a.split("%")[0])) for a in self._resolve(host)
            ]
        except (OSError, ValueError) as exc:
            return f"host {host} does not resolve: {exc}"
        bad = [a for a in addresses if not self._address_allowed(a, port)]
        if bad:
            return self._rule(f"host {host} resolves to {_kind(bad[0])} address {bad[0]}")
        return None

    def _rule(self, finding: str) -> str:
        """``finding`` with the rule it breaks named."""
        return (
            f"{finding}; rule: callbacks reach only public addresses or the allowed targets "
            f"(callback_allowed_hosts: {self._allowed_text})"
        )

    def _name_allowed(self, host: str, port: int) -> bool:
        if host not in self._names:
            return False
        allowed_port = self._names[host]
        return allowed_port is None or allowed_port == port

    def _address_allowed(self, address: IpAddress, port: int) -> bool:
        for network, allowed_port in self._networks:
            if address in network and (allowed_port is None or allowed_port == port):
                return True
        return address.is_global and not (address.is_multicast or address.is_reserved)


IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: The legacy IPv4 spellings ``inet_aton`` accepts: one to four decimal, octal or hex parts.
_LEGACY_IPV4 = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}")


def _split_target(target: str) -> tuple[str, int | None]:
    """An allowed target as ``(host, port or None)``: ``h``, ``h:p``, ``[v6]``, ``[v6]:p``,
    a bare IPv6 address or a CIDR network.

    Raises:
        ValueError: a port that is not a number from 1 to 65535.
    """
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        return host, _port(rest[1:]) if rest.startswith(":") else None
    if target.count(":") == 1:
        host, _, port = target.partition(":")
        return host, _port(port)
    return target, None


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"not a port: {text!r}")
    return port


def _kind(address: IpAddress) -> str:
    """What makes ``address`` non-public, in words."""
    for name in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(address, f"is_{name}"):
            return name.replace("_", "-")
    return "not globally routable"


def _unmapped(address: IpAddress) -> IpAddress:
    """The IPv4 address of an IPv4-mapped IPv6 one (``::ffff:a.b.c.d``), else ``address``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text.strip("[]"), strict=False)
    except ValueError:
        return False
    return True


def _as_ip(host: str) -> IpAddress | None:
    """The address ``host`` spells (module docstring of ``HostPolicy``), else None."""
    try:
        return _unmapped(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        pass
    if _LEGACY_IPV4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def check_callback_url(url: str, policy: HostPolicy) -> str:
    """Return ``url`` if callbacks may go there; raise ``CallbackRefused`` otherwise."""
    reason = policy.refusal_at_acceptance(url)
    if reason is not None:
        raise CallbackRefused(url, reason)
    return url
