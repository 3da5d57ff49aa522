"""Two contexts whose aggregates hold ids of each other's (tests/e2e/models/mutual_ids.loom):
`Alpha.Xylo` keeps a `Beta.Yarn id?`, `Beta.Yarn` an `Alpha.Xylo id`.

The generated service died at import with a circular ImportError between `alpha/domain.py` and
`beta/domain.py`. The ids now live in each context's `ids.py`, which imports no context: either
domain module imports first, and over HTTP (SQLite and PostgreSQL) each aggregate stores, finds
and returns the other's id.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loom.build.package import build_model
from loom.lang import compile_files
from loom.testing import serve

MODEL = Path(__file__).resolve().parent / "models" / "mutual_ids.loom"


async def ok(r: Any) -> Any:
    assert r.status_code in (200, 201, 204), r.text
    return r.json() if r.status_code in (200, 201) else None


async def test_each_holds_the_others_id(database_url: str) -> None:
    async with serve([MODEL], database_url) as c:
        x = (await ok(await c.post("/api/xylos", json={"name": "x", "partner": None})))["id"]
        y = (await ok(await c.post("/api/yarns", json={"name": "y", "owner": x})))["id"]
        await ok(await c.post(f"/api/xylos/{x}/pair_with", json={"yarn": y}))
        assert (await ok(await c.get(f"/api/xylos/{x}")))["partner"] == y
        assert (await ok(await c.get(f"/api/yarns/{y}")))["owner"] == x
        found = await ok(await c.get("/api/yarns/find/by_owner", params={"owner": x}))
        assert [f["id"] for f in found] == [y]

        spun: list[Any] = []

        async def on_spun(event: Any) -> None:
            spun.append(event)

        c.service.events.subscribe(c.module("beta.domain").Spun, on_spun)
        await ok(await c.post(f"/api/yarns/{y}/spin"))
        assert [(str(e.yarn), str(e.owner)) for e in spun] == [(y, x)]


@pytest.mark.parametrize("first", ["alpha", "beta"])
def test_either_domain_module_imports_first(first: str, tmp_path: Path) -> None:
    result = compile_files([str(MODEL)])
    assert result.model is not None, [str(d) for d in result.diagnostics]
    build_model(result.model, tmp_path / "svc")
    code = f"import svc.{first}.domain, svc.main; svc.main.build_app('sqlite+aiosqlite://')"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
