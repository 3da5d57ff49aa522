"""`create_app(asyncapi=...)`: the document file served at GET /asyncapi.json as written, and a
missing or broken one refused at startup with a sentence, never a traceback."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import MetaData

from loom.runtime import StartupRefused, create_app

DOCUMENT = (
    '{\n  "asyncapi": "3.0.0",\n  "info": {"title": "t", "version": "0"},\n  "channels": {}\n}\n'
)


async def test_the_file_is_served_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "asyncapi.json"
    path.write_text(DOCUMENT, encoding="utf-8")
    app = create_app(title="t", metadata=MetaData(), routers=[], asyncapi=path)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
        r = await client.get("/asyncapi.json")
        assert (r.status_code, r.headers["content-type"]) == (200, "application/json")
        assert r.text == DOCUMENT
        assert (await client.post("/asyncapi.json")).status_code == 405
        assert "/asyncapi.json" not in app.openapi()["paths"]


async def test_without_a_document_there_is_no_route() -> None:
    app = create_app(title="t", metadata=MetaData(), routers=[])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
        assert (await client.get("/asyncapi.json")).status_code == 404


@pytest.mark.parametrize("content", [None, "{not json", "\udcff"])
def test_a_missing_or_broken_document_is_refused(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "asyncapi.json"
    if content is not None:
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(StartupRefused, match=r"cannot read its AsyncAPI document .*asyncapi.json"):
        create_app(title="t", metadata=MetaData(), routers=[], asyncapi=path)
