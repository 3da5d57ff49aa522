"""A process that serves a built model, sends requests, and dies by SIGKILL right after the n-th
commit its requests make (`Faults.kill_after_commit`): no lifespan shutdown, no relay stop, the
connections dropped as they are. The crash tests run it, restart the service, and count.

    python -m tests.e2e.crash_at_commit BUILD_DIR DATABASE_URL N PATH JSON [PATH JSON ...]

Prints one line per answered request (`<status> <body>`); exits 0 when every request was answered
(the n-th commit never came), and dies with SIGKILL otherwise."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx

from loom.build.package import import_package


async def _run(build: Path, database_url: str, n: int, requests: list[tuple[str, str]]) -> None:
    app = import_package(build).build_app(database_url)
    async with app.router.lifespan_context(app):
        app.state.loom.faults.kill_after_commit(n)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
            for path, body in requests:
                answer = await client.post(path, json=json.loads(body))
                print(answer.status_code, answer.text, flush=True)


def main(argv: list[str]) -> None:
    build, url, n, *rest = argv
    requests = list(zip(rest[::2], rest[1::2], strict=True))
    asyncio.run(_run(Path(build), url, int(n), requests))


if __name__ == "__main__":
    main(sys.argv[1:])
