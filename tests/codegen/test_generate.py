"""The generated package: snapshots, determinism, formatting, lint, import and an HTTP smoke test.

Models come from the front end when `loom.lang.compile_files` exists (the examples), and from the
hand-built IR of the banking example in `hand_ir.py` either way (so the back end is tested on its
own).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from loom.codegen.python import generate
from loom.codegen.python.schemas import http_create
from loom.model import ir
from loom.model.naming import snake
from tests.codegen.hand_ir import banking_model
from tests.codegen.util import ROOT, check_snapshots, import_generated, ruff, write_tree

EXAMPLES = {
    "banking": ["examples/banking/banking.loom"],
    "sales": ["examples/sales/sales.loom", "examples/sales/onboarding.loom"],
    "support": ["examples/support/support.loom"],
    "ok_support_workflows": ["tests/lang/data/ok/support_workflows.loom"],
    "ok_values_payloads": ["tests/lang/data/ok/values_payloads.loom"],
    "shop": ["examples/shop/shop.loom"],
    "ok_events": ["tests/lang/data/ok/events.loom"],
    "ok_renames": ["tests/lang/data/ok/renames.loom"],
    "principal": ["tests/e2e/models/principal.loom"],
    "reminder_at_loaded": ["tests/e2e/models/reminder_at_loaded.loom"],
    "mutual_ids": ["tests/e2e/models/mutual_ids.loom"],
    "scheduling": ["examples/scheduling/scheduling.loom"],
    "api_calls": ["tests/runtime/api_calls/dispatch.loom"],
    "billing_money": ["tests/e2e/models/billing_money.loom"],
    "hotel_time": ["tests/e2e/models/hotel_time.loom"],
    "decimal_params": ["tests/e2e/models/decimal_params.loom"],
    "lists": ["tests/e2e/models/lists.loom"],
    "list_functions": ["tests/e2e/models/list_functions.loom"],
    "system_principal": ["tests/e2e/models/system_principal.loom"],
    "dunning": ["tests/e2e/models/dunning.loom"],
    "tenants": ["tests/e2e/models/tenants.loom"],
    "tenants_processes": ["tests/e2e/models/tenants_processes.loom"],
    "tenants_channels": ["tests/e2e/models/tenants_channels.loom"],
    "tenants_instances": ["tests/e2e/models/tenants_instances.loom"],
    "read_rules": ["tests/e2e/models/read_rules.loom"],
    "eventsourced_reactions": ["tests/e2e/models/eventsourced_reactions.loom"],
    "refused_saves": ["tests/e2e/models/refused_saves.loom"],
    "builtin_functions": ["tests/e2e/models/builtin_functions.loom"],
    "entry_gates": ["tests/e2e/models/entry_gates.loom"],
    "wide_finds": ["tests/e2e/models/wide_finds.loom"],
}


def compile_example(name: str) -> ir.Model:
    try:
        from loom.lang import compile_files
    except ImportError:
        pytest.skip("the front end (loom.lang.compile_files) is not available yet")
    cwd = os.getcwd()
    os.chdir(ROOT)  # file names in the model (and so in the headers) are as given: relative
    try:
        result = compile_files(EXAMPLES[name])
    finally:
        os.chdir(cwd)
    assert result.model is not None, [str(d) for d in result.diagnostics]
    return result.model


MODELS = ["hand_banking", *EXAMPLES]


@pytest.fixture(params=MODELS)
def model_case(request: pytest.FixtureRequest) -> tuple[str, ir.Model]:
    name = request.param
    if name == "hand_banking":
        return name, banking_model()
    return name, compile_example(name)


@pytest.fixture
def generated_dir(model_case: tuple[str, ir.Model], tmp_path: Path) -> Path:
    _, model = model_case
    return write_tree(generate(model, package="svc"), tmp_path / "svc")


def test_snapshots(model_case: tuple[str, ir.Model], update_snapshots: bool) -> None:
    name, model = model_case
    check_snapshots(name, generate(model), update_snapshots)


def test_deterministic(model_case: tuple[str, ir.Model]) -> None:
    _, model = model_case
    first = generate(model)
    assert first == generate(model)
    assert list(first) == sorted(first)
    assert first == generate(model, package="another_name")  # nothing depends on the name


def test_layout(model_case: tuple[str, ir.Model]) -> None:
    _, model = model_case
    files = generate(model)
    for ctx in model.contexts:
        for kind in (
            "__init__",
            "domain",
            "tables",
            "repositories",
            "schemas",
            "routes",
            "workflows",
        ):
            assert f"{snake(ctx.name)}/{kind}.py" in files
        # the ids live apart from the domain, which imports no other context's domain
        assert (f"{snake(ctx.name)}/ids.py" in files) == bool(ctx.aggregates)
        assert ".domain import" not in files[f"{snake(ctx.name)}/domain.py"]
    assert {"__init__.py", "_metadata.py", "main.py", "asyncapi.json"} <= set(files)
    for rel, text in files.items():
        if rel.endswith(".json"):  # JSON has no comments (asyncapi.json's `info` says what it is)
            assert "/work/" not in text and "/tmp/" not in text
            continue
        assert text.startswith("# Generated by Loom from "), rel
        assert "Do not edit" in text.splitlines()[1], rel
        assert "/work/" not in text and "/tmp/" not in text, rel


@pytest.mark.parametrize("line_length", ["88", "100"])
def test_ruff_format(generated_dir: Path, line_length: str) -> None:
    done = ruff(
        "format",
        "--isolated",
        "--line-length",
        line_length,
        "--check",
        "--diff",
        str(generated_dir),
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_check(generated_dir: Path) -> None:
    done = ruff(
        "check", "--isolated", "--select", "F,E9", "--output-format", "concise", str(generated_dir)
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_imports_sorted_as_in_a_users_project(generated_dir: Path) -> None:
    """isort (ruff's `I`) accepts the imports where `loom` is an installed, third-party package."""
    done = ruff(
        "check",
        "--isolated",
        "--select",
        "I",
        "--config",
        'lint.isort.known-third-party=["loom"]',
        "--output-format",
        "concise",
        str(generated_dir),
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_imports_and_builds(
    model_case: tuple[str, ir.Model],
    generated_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if any(ctx.tenanted for ctx in model_case[1].contexts):
        # a tenanted context needs authentication, or the app refuses to build
        monkeypatch.setenv("LOOM_JWT_SECRET", "a-test-secret-that-is-long-enough-for-hs256")
    main = import_generated(generated_dir)
    app = main.build_app(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}")
    paths = app.openapi()["paths"]
    # a workflow has routes when it has a command `create` or instances to read (a
    # reaction-only workflow that keeps no instance has none)
    workflows = any(
        http_create(wf) is not None or wf.correlation is not None
        for ctx in model_case[1].contexts
        for wf in ctx.workflows
    )
    assert any(p.startswith("/api/workflows/") for p in paths) == workflows
    assert any(p.endswith("/{id}") for p in paths)


@pytest.fixture
def banking_app(tmp_path: Path) -> Iterator[object]:
    try:
        from loom.lang import compile_files  # noqa: F401
    except ImportError:
        model = banking_model()
    else:
        model = compile_example("banking")
    out = write_tree(generate(model), tmp_path / "bank")
    main = import_generated(out)
    yield main.build_app(f"sqlite+aiosqlite:///{tmp_path / 'bank.db'}")


async def test_http_smoke(banking_app: object) -> None:
    app = banking_app
    async with app.router.lifespan_context(app):  # type: ignore[attr-defined]
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
            r = await client.post("/api/workflows/register_customer", json={"name": "Ann"})
            assert r.status_code == 200, r.text
            owner = r.json()
            ids = []
            for number in ("A-1", "A-2"):
                r = await client.post(
                    "/api/workflows/open_account", json={"owner": owner, "number": number}
                )
                assert r.status_code == 200, r.text
                ids.append(r.json())
            a, b = ids
            r = await client.post(f"/api/accounts/{a}/deposit", json={"amount": 100})
            assert r.status_code == 204, r.text
            transfer = {"fromAccount": a, "toAccount": b, "amount": 30}
            r = await client.post("/api/workflows/transfer", json=transfer)
            assert (r.status_code, r.json()) == (200, 70)

            # A refused transfer leaves nothing saved (the withdrawal is undone).
            r = await client.post("/api/workflows/transfer", json={**transfer, "amount": 500})
            assert r.status_code == 422
            assert (
                r.json()["rule"] == "Account.withdraw: precondition balance >= amount + fee(amount)"
            )
            r = await client.post(
                "/api/workflows/audited_transfer", json={**transfer, "toAccount": a}
            )
            assert r.status_code == 422
            assert (
                r.json()["rule"]
                == "workflow auditedTransfer: precondition fromAccount != toAccount"
            )

            r = await client.get(f"/api/accounts/{b}")
            assert r.status_code == 200
            body = r.json()
            assert body["balance"] == 30 and body["owner"] == owner and body["kind"] == "Checking"
            assert {"id", "version", "openedAt", "overdrawn", "tags", "frozen"} <= set(body)
            r = await client.get(f"/api/accounts/{a}")
            assert r.json()["balance"] == 70

            r = await client.get("/api/accounts", params={"limit": 1})
            assert r.status_code == 200 and r.json()["total"] == 2 and len(r.json()["items"]) == 1
            r = await client.get("/api/accounts", params={"limit": 0})
            assert r.status_code == 422

            r = await client.post(f"/api/accounts/{b}/freeze")
            assert r.status_code == 204
            r = await client.post(f"/api/accounts/{b}/deposit", json={"amount": 1})
            assert r.status_code == 422 and r.json()["type"].endswith("state-gate-refused")
            r = await client.get(f"/api/accounts/{owner}")
            assert r.status_code == 404
