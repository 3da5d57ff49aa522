"""bench/start_instructions.py's child: a server started as it is started normally, which, once
uvicorn has started, sends itself one GET and exits at once, printing the answer's status, its
resident memory and its number of loaded modules. So what runs is the start, from the
interpreter's first instruction to the first 200, and no more.

    python bench/_first_200.py ref PORT DATABASE_URL          # bench/_start_ref.py
    python bench/_first_200.py loom PORT MODEL [OPTIONS...]    # `loom run MODEL --port PORT ...`
"""

from __future__ import annotations

import http.client
import os
import sys
import threading
from pathlib import Path
from typing import Any

import uvicorn.server


def _answer_once(port: int, path: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    status = conn.getresponse().status
    rss = next(x for x in Path("/proc/self/status").read_text().splitlines() if "VmRSS" in x)
    print(f"status {status} rss_kb {rss.split()[1]} modules {len(sys.modules)}", flush=True)
    os._exit(0 if status == 200 else 1)


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    path = "/accounts" if kind == "ref" else "/api/accounts"
    started = uvicorn.server.Server.startup

    async def startup(self: uvicorn.server.Server, sockets: Any = None) -> None:
        await started(self, sockets)
        threading.Thread(target=_answer_once, args=(port, path), daemon=True).start()

    uvicorn.server.Server.startup = startup  # type: ignore[method-assign]
    if kind == "ref":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from bench._start_ref import serve_reference

        serve_reference(port, sys.argv[3])
    else:
        from loom.cli.main import main as loom

        sys.argv = ["loom", "run", *sys.argv[3:], "--port", str(port)]
        loom()


if __name__ == "__main__":
    main()
