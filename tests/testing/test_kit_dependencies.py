"""`from loom.testing import serve` needs only loom's base dependencies: in a fresh interpreter where
every package of the `test` extra is hidden, the kit imports and serves a model over HTTP."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the import names of the distributions the `test` extra lists, where they differ
_MODULE = {"pytest-asyncio": "pytest_asyncio", "jsonschema-rs": "jsonschema_rs"}

SCRIPT = """
import asyncio, importlib.abc, sys
from pathlib import Path

HIDDEN = set(sys.argv[1].split(","))

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"hidden: {name}", name=name)
        return None

sys.meta_path.insert(0, Hide())
for name in list(sys.modules):
    if name.split(".")[0] in HIDDEN:
        del sys.modules[name]

from loom.testing import serve

async def main():
    async with serve([Path(sys.argv[2])], "sqlite+aiosqlite:///:memory:") as c:
        r = await c.post("/api/workflows/register_customer", json={"name": "Ada"})
        assert r.status_code == 200, r.text
        print("served", r.status_code)

asyncio.run(main())
"""


def _test_extra() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [
        re.split(r"[<>=\[ ;]", d, maxsplit=1)[0] for d in project["optional-dependencies"]["test"]
    ]
    return [_MODULE.get(n, n.replace("-", "_")) for n in names]


def test_the_kit_runs_without_the_test_extra() -> None:
    hidden = _test_extra()
    assert "pytest" in hidden and "httpx" not in hidden
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            ",".join(hidden),
            str(ROOT / "examples/banking/banking.loom"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "served 200" in r.stdout
