"""A tenanted reaction calling another tenanted context's query (tenanted/tenanted.loom): the call
carries the system principal of the event's tenant as a system token (docs/deployables.md#calls-
made-by-the-system), so the callee serves it in that tenant, in process and across deployables, on
SQLite and PostgreSQL. Across deployables without a shared secret the call is a 401 naming the
setting, and the reaction is dead-lettered with it; a client cannot forge a system token."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from loom.runtime.http.system_tokens import HEADER, SystemTokens
from loom.testing import ServiceClient, serve
from tests.conftest import create_pg_database
from tests.e2e.tokens import SECRET, token, use_secret
from tests.liveserver import free_port, free_ports, running
from tests.waiting import wait_until

HERE = Path(__file__).parent / "tenanted"
MODEL = HERE / "tenanted.loom"
SPLIT = HERE / "deployables.loom"
ACME = token(tenant="acme")
GLOBEX = token(sub="bob", tenant="globex")
ADMIN = token(tenant="acme", roles=["admin"])
GLOBEX_ADMIN = token(tenant="globex", roles=["admin"])
SERVICE_SECRET = "a-service-secret-shared-by-every-deployable"


async def _call(c: ServiceClient, method: str, url: str, who: dict[str, str], **kw: Any) -> Any:
    r = await c.request(method, url, headers=who, **kw)
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_tenanted_reaction_calls_a_tenanted_query_in_process(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_secret(monkeypatch)
    monkeypatch.delenv("LOOM_SERVICE_SECRET", raising=False)  # in process: none needed
    async with serve([MODEL], database_url) as c:
        ada = await _call(c, "POST", "/api/commands/register", ACME, json={"name": "Ada"})
        # the same name in the other tenant: the call must read acme's technician, not this one
        await _call(c, "POST", "/api/commands/register", GLOBEX, json={"name": "Bob"})
        order = await _call(
            c, "POST", "/api/commands/open_for", ACME, json={"title": "pump", "tech": ada}
        )
        # the client settles the reactions: Enrich has run (or been dead-lettered)
        row = await _call(c, "GET", f"/api/work_orders/{order}", ACME)
        dead = await _call(c, "GET", "/api/admin/dead-letters", ADMIN)
        assert (row["tech"], dead["total"]) == ("Ada", 0), dead

        # globex's reaction, given acme's technician, finds none in globex: the callee's 404 is
        # the reaction's error (the call ran in the event's tenant, not in any other)
        bob = await _call(
            c, "POST", "/api/commands/open_for", GLOBEX, json={"title": "x", "tech": ada}
        )
        assert (await _call(c, "GET", f"/api/work_orders/{bob}", GLOBEX))["tech"] == ""
        theirs = await _call(c, "GET", "/api/admin/dead-letters", GLOBEX_ADMIN)
        assert theirs["total"] == 1, theirs
        assert f"Technician {ada} does not exist" in theirs["items"][0]["last_error"], theirs


async def test_a_client_cannot_forge_a_system_token(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_secret(monkeypatch)
    monkeypatch.delenv("LOOM_SERVICE_SECRET", raising=False)
    forged = SystemTokens(SERVICE_SECRET, shared=True).issue("acme")  # not this service's secret
    async with serve([MODEL], database_url) as c:
        for value in (forged, "garbage"):
            r = await c.get("/api/work_orders", headers={HEADER: value})
            assert r.status_code == 401, r.text
            body = r.json()
            assert body["type"] == "urn:loom:problem:unauthenticated", body
            assert "LOOM_SERVICE_SECRET" in body["detail"], body


# --------------------------------------------------------------------------------------------------
# Across deployables: Desk (Dispatch) and People (Directory), each its own `loom run`


@contextmanager
def _deployables(
    folder: Path, pg_urls: tuple[str, str] | None, secrets: tuple[str | None, str | None]
) -> Iterator[tuple[str, str]]:
    """People, then Desk calling it at its URL: their base URLs. `secrets`: each one's
    LOOM_SERVICE_SECRET (None: none)."""
    files = [str(shutil.copy(f, folder / f.name)) for f in (MODEL, SPLIT)]
    with ExitStack() as stack:
        bases: list[str] = []
        for i, name in enumerate(("People", "Desk")):
            args = [*files, "--deployable", name, "--jwt-secret", SECRET]
            if pg_urls is not None:
                args += ["--database-url", pg_urls[i]]
            if name == "Desk":
                args += ["--api", f"Directory={bases[0]}"]
            stack.enter_context(_service_secret(secrets[i]))
            bases.append(stack.enter_context(running(*args, port=free_port())))
        yield bases[0], bases[1]


@contextmanager
def _service_secret(value: str | None) -> Iterator[None]:
    """LOOM_SERVICE_SECRET as the next `loom run` inherits it (it reads its environment once)."""
    before = os.environ.pop("LOOM_SERVICE_SECRET", None)
    if value is not None:
        os.environ["LOOM_SERVICE_SECRET"] = value
    try:
        yield
    finally:
        os.environ.pop("LOOM_SERVICE_SECRET", None)
        if before is not None:
            os.environ["LOOM_SERVICE_SECRET"] = before


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def pg_urls(request: pytest.FixtureRequest) -> tuple[str, str] | None:
    if request.param == "sqlite":
        return None  # each deployable's own SQLite file beside the model
    cluster = request.getfixturevalue("pg_cluster")
    return cluster.url(create_pg_database(cluster)), cluster.url(create_pg_database(cluster))


def _ok(method: str, url: str, who: dict[str, str], **kw: Any) -> Any:
    r = httpx.request(method, url, headers=who, timeout=10, **kw)
    assert r.status_code == 200, r.text
    return r.json()


def _open_order(people: str, desk: str) -> str:
    ada = _ok("POST", f"{people}/api/commands/register", ACME, json={"name": "Ada"})
    order: str = _ok(
        "POST", f"{desk}/api/commands/open_for", ACME, json={"title": "pump", "tech": ada}
    )
    return order


def test_across_deployables_the_call_carries_the_tenant(
    tmp_path: Path, pg_urls: tuple[str, str] | None
) -> None:
    with _deployables(tmp_path, pg_urls, (SERVICE_SECRET, SERVICE_SECRET)) as (people, desk):
        order = _open_order(people, desk)
        wait_until(
            lambda: _ok("GET", f"{desk}/api/work_orders/{order}", ACME)["tech"] == "Ada",
            timeout=30,
            what="Desk's reaction to fill the order from People's answer",
        )
        assert _ok("GET", f"{desk}/api/admin/dead-letters", ADMIN)["total"] == 0


def test_across_deployables_without_a_shared_secret_the_reaction_is_dead_lettered(
    tmp_path: Path,
) -> None:
    with _deployables(tmp_path, None, (None, SERVICE_SECRET)) as (people, desk):
        order = _open_order(people, desk)
        page = wait_until(
            lambda: (p := _ok("GET", f"{desk}/api/admin/dead-letters", ADMIN))["total"] and p,
            timeout=30,
            what="the refused reaction's dead letter",
        )
        error = page["items"][0]["last_error"]
        assert f"{HEADER} header does not verify" in error, error
        assert "LOOM_SERVICE_SECRET" in error, error
        assert _ok("GET", f"{desk}/api/work_orders/{order}", ACME)["tech"] == ""


def test_loom_up_gives_its_deployables_one_secret(tmp_path: Path) -> None:
    """`loom up` with no secret given draws one for both deployables: the call verifies."""
    model = tmp_path / "model.loom"
    model.write_text(MODEL.read_text() + SPLIT.read_text())
    port = free_ports(2)
    env = {k: v for k, v in os.environ.items() if k != "LOOM_SERVICE_SECRET"}
    log = tmp_path / "up.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loom.cli", "up", str(model), "--port", str(port)]
            + ["--jwt-secret", SECRET],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env={**env, "PYTHONUNBUFFERED": "1"},
        )
    try:
        # deployables are served in the order declared: Desk on port, People on port + 1
        desk, people = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"

        def serving() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"loom up exited {proc.returncode}:\n{log.read_text()}")
            try:
                return all(
                    httpx.get(f"{b}/openapi.json").status_code == 200 for b in (desk, people)
                )
            except httpx.HTTPError:
                return False

        wait_until(serving, timeout=180, what="both deployables to serve")
        order = _open_order(people, desk)
        wait_until(
            lambda: _ok("GET", f"{desk}/api/work_orders/{order}", ACME)["tech"] == "Ada",
            timeout=30,
            what="Desk's reaction to fill the order from People's answer",
        )
    finally:
        proc.send_signal(2)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
