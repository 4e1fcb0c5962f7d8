"""Where Threadline may call out on a tenant's behalf (MCP servers and webhooks).

A tenant names a URL; Threadline's own network is behind it. So a URL is refused when its host is, or resolves
to, an address that is not public (loopback, private, link-local, shared, reserved, multicast), unless the
operator names the host or a network holding the address in ``THREADLINE_EGRESS_ALLOW``. The check runs twice:
when the URL is registered (``EgressPolicy.check``, a clear 400 for the tenant), and again on every connection
(``PinnedTransport``), which connects to the very address it just checked rather than letting the HTTP stack
resolve the name a second time: a name that resolved to a public address at registration and to ``10.0.0.5``
now (DNS rebinding) is refused before any byte is sent.

Every pinned client verifies certificates with one TLS context per process (``tls_context``): building one
reads the system's certificate authorities, 21 ms of CPU that each webhook dispatcher and each MCP session
paid again (half of a test app's start-up). An ``ssl.SSLContext`` may be shared by any number of clients and
connections. Its verification settings are never changed after it is built, so sharing keeps verification
exactly as strict; the one write is httpcore's ALPN list on each connection, the same ``http/1.1`` for every
pinned client (none speaks HTTP/2).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

import httpx2

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# (host, port) -> the addresses a connection to it may use; the default asks the system resolver.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
_SCHEMES = {"http": 80, "https": 443}


class EgressRefused(Exception):
    """The URL may not be called; the message says why, in terms a tenant can act on (no address is
    revealed beyond the one the tenant's own URL names)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A URL that passed the rules, with the address a connection must use (the one that was checked)."""

    url: str
    scheme: str
    host: str
    port: int
    address: str


async def system_resolver(host: str, port: int) -> Sequence[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@cache
def tls_context() -> ssl.SSLContext:
    """The context every pinned connection verifies with, built on first use: httpx2's default (the
    system's certificate authorities, host names checked, certificates required), ignoring ``SSL_CERT_*``
    as the clients ignore the rest of the environment."""
    return httpx2.create_ssl_context(verify=True, trust_env=False)


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


class EgressPolicy:
    """The operator's allow list and the public-address rule; see the module docstring."""

    __slots__ = ("_hosts", "_networks", "_resolver")

    def __init__(self, allow: str = "", *, resolver: Resolver = system_resolver) -> None:
        self._hosts: set[str] = set()
        self._networks: list[Network] = []
        for entry in (part.strip() for part in allow.split(",")):
            if not entry:
                continue
            try:
                self._networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self._hosts.add(entry.lower().rstrip("."))
        self._resolver = resolver

    def allows_address(self, host: str, address: str) -> bool:
        """Whether a connection to ``host`` may use ``address``: a host the operator named may use any
        address; otherwise the address must be in a network the operator named, or public."""
        if host.lower().rstrip(".") in self._hosts:
            return True
        ip = _literal(address)
        if ip is None:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip.version == network.version and ip in network for network in self._networks):
            return True
        return ip.is_global and not ip.is_multicast

    async def check(self, url: str) -> Target:
        """The URL's target, resolved and checked: every address the name resolves to must be allowed (a
        name answering with one public and one private address is refused, since either may be used)."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES or not parts.hostname:
            raise EgressRefused("The URL must be http:// or https:// with a host.")
        host = parts.hostname
        try:
            port = parts.port or _SCHEMES[scheme]
        except ValueError as exc:
            raise EgressRefused("The URL's port is not a number from 0 to 65535.") from exc
        literal = _literal(host)
        if literal is not None:
            addresses: Sequence[str] = [str(literal)]
        else:
            try:
                addresses = await self._resolver(host, port)
            except (OSError, UnicodeError) as exc:
                raise EgressRefused(f"The host {host} could not be resolved.") from exc
            if not addresses:
                raise EgressRefused(f"The host {host} could not be resolved.")
        refused = [address for address in addresses if not self.allows_address(host, address)]
        if refused:
            raise EgressRefused(
                f"The host {host} is, or resolves to, an address that is not public; the operator may allow "
                "it with THREADLINE_EGRESS_ALLOW."
            )
        return Target(url=url, scheme=scheme, host=host, port=port, address=addresses[0])


class PinnedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that checks each request's URL with the policy and connects to the address it
    checked: the name is resolved once per request, here, and the HTTP stack only sees the address (the
    ``Host`` header and TLS server name keep the name, so virtual hosts and certificates work as before).
    A refusal is a ``ConnectError``, what the callers already treat as an unreachable peer. Proxies from
    the environment are ignored: a proxy would resolve the name itself."""

    def __init__(self, policy: EgressPolicy) -> None:
        self._policy = policy
        self._inner = httpx2.AsyncHTTPTransport(verify=tls_context(), trust_env=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            target = await self._policy.check(str(request.url))
        except EgressRefused as exc:
            raise httpx2.ConnectError(str(exc), request=request) from exc
        extensions = dict(request.extensions)
        if target.scheme == "https":
            extensions["sni_hostname"] = target.host
        # A request of its own for the address: the caller's keeps its URL (redirect checks compare it).
        pinned = httpx2.Request(
            request.method,
            request.url.copy_with(host=target.address),
            headers=request.headers,  # the Host header names the host, as the caller built it
            stream=request.stream,
            extensions=extensions,
        )
        return await self._inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self._inner.aclose()


def pinned_client(
    policy: EgressPolicy,
    *,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` whose every connection goes through ``PinnedTransport`` (the signature of
    the mcp SDK's ``httpx_client_factory``, once ``policy`` is bound)."""
    return httpx2.AsyncClient(
        transport=PinnedTransport(policy),
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0),
        auth=auth,
        trust_env=False,
    )
