"""Issue 18 finding 6: errors of aiohttp's HTTP parser are problem+json, without a traceback.

The app is served the way ``meetbot serve`` serves it (:class:`ApiRunner`); raw requests with a
request line or a header over 8,190 bytes, a malformed request line or a malformed header get
a 400 ``application/problem+json`` that does not echo the request, and nothing is logged with a
traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from control_plane.api.server import ApiRunner

pytestmark = pytest.mark.api

LONG = "x" * 9000


@pytest.fixture
async def port(app: web.Application) -> AsyncIterator[int]:
    runner = ApiRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


async def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    ("request_bytes", "code"),
    [
        (f"GET /api/v1/bots?q={LONG} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), "request_too_long"),
        (
            f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: {LONG}\r\n\r\n".encode(),
            "request_too_long",
        ),
        (b"GARBAGE\r\n\r\n", "bad_request"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", "bad_request"),
        (b"GET /healthz HTTP/9.9\x00\r\n\r\n", "bad_request"),
    ],
)
async def test_parser_errors_are_problem_json_without_a_traceback(
    port: int, request_bytes: bytes, code: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    status, headers, body = await _raw(port, request_bytes)
    assert status == 400
    assert headers["content-type"].startswith("application/problem+json")
    problem = json.loads(body)
    assert (problem["status"], problem["code"]) == (400, code)
    assert LONG not in body.decode()
    assert [r for r in caplog.records if r.exc_info] == []
    # The server still answers.
    status, _, _ = await _raw(
        port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert status == 200
