"""Stream tokens in a real browser: a customer's page on another origin reads a live run with a plain
``EventSource`` and ``?token=``, survives its connection being cut server side (the browser's own
reconnection resumes by ``Last-Event-ID``: no text repeated, none missing), and is refused another run's
stream and a page origin the token does not allow."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.dashboard.browser.conftest import Served, screenshot
from tests.runs.helpers import DONE, parse_sse

PAGE = Path(__file__).resolve().parent / "stream_token_page"
LIVE_RUN = "hello #notools #delay=100 #chunks=60"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    disable_nagle_algorithm = True  # a file is two writes (head, body): no ~40 ms wait on a delayed ACK

    def log_message(self, format: str, *args: Any) -> None:
        """The page server's requests are not the test's output."""


@pytest.fixture
def page_port() -> Iterator[int]:
    """The customer's site: a static server on a second port, so its pages are another origin."""
    handler = functools.partial(_Quiet, directory=str(PAGE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="page-server", daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


class CuttableProxy:
    """A TCP relay between the browser and the API whose open connections the test can cut: the
    server-side drop a load balancer or a restart would cause, which the browser cannot tell apart."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> asyncio.Server:
        server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        return server

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self.writers |= {writer, up_writer}

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self.writers -= {writer, up_writer}

    def cut(self) -> int:
        cut = len(self.writers)
        for writer in list(self.writers):
            writer.transport.abort()
        return cut


@pytest.fixture
async def proxy(served: Served) -> AsyncIterator[CuttableProxy]:
    relay = CuttableProxy(int(served.url.rsplit(":", 1)[1]))
    server = await relay.start()
    try:
        yield relay
    finally:
        relay.cut()
        server.close()


async def _api(served: Served) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {served.secret_key}"}
    return httpx.AsyncClient(base_url=served.url, headers=headers, timeout=30)


async def _run(api: httpx.AsyncClient, text: str) -> dict[str, Any]:
    thread = (await api.post("/v1/threads", json={})).json()["id"]
    response = await api.post(f"/v1/threads/{thread}/runs", json={"input": text})
    assert response.status_code == 201, response.text
    run: dict[str, Any] = response.json()
    return run


def _page_url(origin: str, stream: str, token: str) -> str:
    """The token in the fragment: never sent to the page's server. The query differs per stream, so each
    visit loads the page anew (a change of fragment alone would not)."""
    return f"{origin}/index.html?{urlencode({'for': stream})}#" + urlencode(
        {"stream": stream, "token": token}
    )


async def test_a_page_on_another_origin_streams_a_run_with_a_token(
    page: Page, served: Served, page_port: int, proxy: CuttableProxy
) -> None:
    site = f"http://127.0.0.1:{page_port}"
    async with await _api(served) as api:
        allowed = await api.patch("/v1/settings", json={"allowedOrigins": [site]})
        assert allowed.status_code == 200, allowed.text
        run, other = await _run(api, LIVE_RUN), await _run(api, "other #notools #chunks=3")
        minted = await api.post(f"/v1/runs/{run['id']}/stream-tokens", json={"ttlSeconds": 60})
        token = minted.json()["token"]

        # Through the relay, so the test can cut the connection mid-run.
        stream = f"http://127.0.0.1:{proxy.port}/v1/runs/{run['id']}/stream"
        await page.goto(_page_url(site, stream, token))
        await expect(page.locator("#status")).to_have_text("open")
        await page.wait_for_function("window.cursors.length >= 8")
        assert proxy.cut() >= 2
        await page.wait_for_function("window.opens >= 2", timeout=20_000)  # the browser came back itself
        await expect(page.locator("#status")).to_have_text("done", timeout=30_000)
        await screenshot(page, "stream-token-live")

        replay = parse_sse((await api.get(f"/v1/runs/{run['id']}/stream")).text)
        assert replay[-1] == DONE
        expected = "".join(e["delta"] for e in replay[:-1] if e["type"] == "text_chunk")
        assert len(expected) > 0
        assert await page.locator("#answer").text_content() == expected
        cursors = await page.evaluate("window.cursors")
        assert cursors == [e["cursor"] for e in replay[:-1]]  # each event once, in order

        # The same token on run B: refused (404), and EventSource gives up (no text, closed).
        await page.goto(_page_url(site, f"{served.url}/v1/runs/{other['id']}/stream", token))
        await expect(page.locator("#status")).to_have_text("refused")
        assert await page.locator("#answer").text_content() == ""

        # A page from an origin the token does not allow (localhost is another origin than 127.0.0.1).
        stranger = f"http://localhost:{page_port}"
        await page.goto(_page_url(stranger, f"{served.url}/v1/runs/{run['id']}/stream", token))
        await expect(page.locator("#status")).to_have_text("refused")
        assert await page.locator("#answer").text_content() == ""
        async with httpx.AsyncClient(base_url=served.url) as anonymous:
            refused = await anonymous.get(
                f"/v1/runs/{run['id']}/stream", params={"token": token}, headers={"origin": stranger}
            )
            assert refused.status_code == 403 and refused.json()["reason"] == "ORIGIN_NOT_ALLOWED"
            wrong_run = await anonymous.get(f"/v1/runs/{other['id']}/stream", params={"token": token})
            assert wrong_run.status_code == 404
