"""The egress rules: what a tenant's URL may reach, checked at registration and again on each connection.

No test here sends anything anywhere: literal addresses need no resolution, names are resolved by a resolver
the test supplies, and every refusal happens before a connection is attempted (the transport's inner pool
is never reached: a test of the pinned address uses a peer on 127.0.0.1, which it allows)."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Any

import httpx2
import pytest

from threadline.kit.egress import EgressPolicy, EgressRefused, pinned_client, tls_context

NOT_PUBLIC = [
    "http://127.0.0.1/mcp",
    "http://127.8.9.10:8080/",
    "http://[::1]/",
    "http://10.0.0.5/",
    "http://172.16.3.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/",
    "http://0.0.0.0/",
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://224.0.0.1/",
]


class Resolver:
    """Answers names from a table, in turn per call (``rebinding``: a different answer the second time)."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        turns = self.answers[host]
        return turns.pop(0) if len(turns) > 1 else turns[0]


@pytest.mark.parametrize("url", NOT_PUBLIC)
async def test_non_public_addresses_are_refused(url: str) -> None:
    with pytest.raises(EgressRefused, match="THREADLINE_EGRESS_ALLOW"):
        await EgressPolicy().check(url)


async def test_public_literal_passes_without_resolving() -> None:
    resolver = Resolver({})
    target = await EgressPolicy(resolver=resolver).check("https://8.8.8.8/mcp")
    assert (target.scheme, target.host, target.port, target.address) == ("https", "8.8.8.8", 443, "8.8.8.8")
    assert resolver.asked == []


@pytest.mark.parametrize(
    "url", ["ftp://8.8.8.8/", "file:///etc/passwd", "http:///nohost", "https://8.8.8.8:99999/"]
)
async def test_only_http_urls_with_a_host(url: str) -> None:
    with pytest.raises(EgressRefused):
        await EgressPolicy().check(url)


async def test_allow_list_of_hosts_and_networks() -> None:
    resolver = Resolver({"mcp.internal": [["10.1.2.3"]], "other.internal": [["10.9.9.9"]]})
    policy = EgressPolicy(" 127.0.0.1 , 192.168.0.0/16,MCP.internal,fd00::/8", resolver=resolver)
    assert (await policy.check("http://127.0.0.1:9000/")).address == "127.0.0.1"
    assert (await policy.check("http://192.168.44.5/")).address == "192.168.44.5"
    assert (await policy.check("http://[fd00::7]/")).address == "fd00::7"
    assert (await policy.check("http://mcp.internal/")).address == "10.1.2.3"  # named host: any address
    with pytest.raises(EgressRefused):
        await policy.check("http://other.internal/")
    with pytest.raises(EgressRefused):
        await policy.check("http://127.0.0.2/")


async def test_a_name_with_one_private_address_among_public_ones_is_refused() -> None:
    resolver = Resolver({"mixed.example": [["8.8.8.8", "10.0.0.1"]]})
    with pytest.raises(EgressRefused, match=r"mixed\.example"):
        await EgressPolicy(resolver=resolver).check("https://mixed.example/")


async def test_unresolvable_name_is_refused() -> None:
    async def fails(host: str, port: int) -> Sequence[str]:
        raise OSError("no such host")

    with pytest.raises(EgressRefused, match="could not be resolved"):
        await EgressPolicy(resolver=fails).check("https://nowhere.example/")


async def test_rebinding_is_refused_before_connecting() -> None:
    """Public at registration, private when connecting: the transport refuses with a ConnectError before
    its pool is asked for a connection, so nothing is sent."""
    resolver = Resolver({"rebind.example": [["93.184.216.34"], ["10.0.0.5"]]})
    policy = EgressPolicy(resolver=resolver)
    assert (await policy.check("http://rebind.example/mcp")).address == "93.184.216.34"
    async with pinned_client(policy) as http:
        with pytest.raises(httpx2.ConnectError, match="not public"):
            await http.post("http://rebind.example/mcp", json={})
    assert resolver.asked == ["rebind.example", "rebind.example"]


async def test_pinned_client_connects_to_the_address_it_checked() -> None:
    """The name resolves (by the test's resolver) to 127.0.0.1, allowed; the request reaches a real peer at
    that address while its Host header keeps the name."""
    from tests.mcp_servers.peers import python_peer

    with python_peer() as peer:
        port = peer.base.rsplit(":", 1)[1]
        resolver = Resolver({"peer.test": [["127.0.0.1"]]})
        policy = EgressPolicy("127.0.0.1", resolver=resolver)
        async with pinned_client(policy) as http:
            response = await http.get(f"http://peer.test:{port}/nothing-here")
        assert response.status_code == 404
        assert peer.seen_headers[-1]["host"] == f"peer.test:{port}"


def test_one_tls_context_as_strict_as_httpx2s_default() -> None:
    """The shared context verifies as a client of httpx2's own making would, against the same authorities."""
    shared, fresh = tls_context(), httpx2.create_ssl_context(verify=True, trust_env=False)
    assert shared is tls_context()
    assert (shared.verify_mode, shared.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert (shared.protocol, shared.minimum_version, shared.options) == (
        fresh.protocol,
        fresh.minimum_version,
        fresh.options,
    )
    assert shared.cert_store_stats() == fresh.cert_store_stats()
    assert shared.cert_store_stats()["x509_ca"] > 0


async def test_pinned_clients_read_the_certificate_authorities_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """What made each webhook dispatcher and MCP session cost 21 ms of CPU: no pinned client made after the
    first loads certificates again."""
    tls_context()
    loads: list[object] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args)
        load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    for _ in range(3):
        async with pinned_client(EgressPolicy()):
            pass
    assert loads == []
    httpx2.create_ssl_context(verify=True, trust_env=False)
    assert len(loads) == 1  # the count sees a load when one happens
