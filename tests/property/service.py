"""Build an accepted model into a package on disk, import it, start it, and lint what was written.

Only public entry points: `loom.lang.compile_sources`, `loom.codegen.python.generate`, the
generated package's `main.build_app`, and ruff as a subprocess.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import itertools
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from loom.codegen.python import generate
from loom.lang import compile_sources, render_text

# A model with extern operations needs a module implementing them at startup. This one implements
# every class and method the runtime asks for, so any model starts without a hand-written module.
EXTERNS_MODULE = "loom_property_externs"
EXTERNS_TEXT = '''"""Extern stubs: every class, every method (they are never called here)."""


class _Extern:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def __getattr__(name):
    return type(name, (_Extern,), {})
'''
_fresh = itertools.count()


def write_service(sources: dict[str, str], folder: Path) -> Path:
    """Compile `sources` (which `loom check` accepts) and generate their service into a new
    package under `folder`; return the package's folder."""
    result = compile_sources(sources)
    assert result.ok and result.model is not None, render_text(result.diagnostics, result.sources)
    package = f"svc_{next(_fresh)}"
    out = folder / package
    for rel, text in generate(result.model, package=package).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return out


@contextmanager
def imported(out: Path) -> Iterator[Any]:
    """The generated package in `out` imported under a module name never used before (its `main`
    module), and unloaded afterwards."""
    name = f"loom_property_{out.name}_{next(_fresh)}"
    spec = importlib.util.spec_from_file_location(
        name, out / "__init__.py", submodule_search_locations=[str(out)]
    )
    assert spec is not None and spec.loader is not None
    sys.modules[name] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(sys.modules[name])
        yield importlib.import_module(f"{name}.main")
    finally:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]


def start_and_probe(out: Path, database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Import the package, start its app on a fresh SQLite file (lifespan: schema, relay,
    scheduler), GET the OpenAPI document and every list route it names (a GET with no path
    parameter): none may answer 5xx."""
    stubs = out.parent / f"{EXTERNS_MODULE}.py"
    if not stubs.exists():
        stubs.write_text(EXTERNS_TEXT)
    monkeypatch.syspath_prepend(str(out.parent))
    monkeypatch.setenv("LOOM_EXTERN_MODULE", EXTERNS_MODULE)
    # a tenanted context refuses to start with no authentication: every model gets a secret
    monkeypatch.setenv("LOOM_JWT_SECRET", "property-tests-secret-of-32-bytes!")
    with imported(out) as main:
        asyncio.run(_probe(main.build_app(f"sqlite+aiosqlite:///{database}")))


async def _probe(app: Any) -> None:
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client,
    ):
        r = await client.get("/openapi.json")
        assert r.status_code == 200, r.text
        lists = [p for p, ops in r.json()["paths"].items() if "get" in ops and "{" not in p]
        for path in lists:
            got = await client.get(path)
            assert got.status_code < 500, f"GET {path}: {got.status_code} {got.text}"


def pyflakes_findings(folders: Sequence[Path]) -> dict[Path, list[str]]:
    """Ruff's F rules (pyflakes: undefined names, unused imports…) over `folders` in one run:
    the findings of each folder, as `file:line: code message`."""
    found: dict[Path, list[str]] = {f: [] for f in folders}
    if not folders:
        return found
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F", "--no-cache"]
        + ["--output-format", "json", *map(str, folders)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr  # 1: findings; anything else: ruff failed
    for item in json.loads(run.stdout or "[]"):
        path = Path(item["filename"])
        folder = next(f for f in folders if path.is_relative_to(f.resolve()))
        rel = path.relative_to(folder.resolve())
        line = item["location"]["row"]
        found[folder].append(f"{rel}:{line}: {item['code']} {item['message']}")
    return found
