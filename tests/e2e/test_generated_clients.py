"""Clients generated from the OpenAPI document of every example: `openapi-python-client` (PyPI)
and `openapi-typescript` (npm, installed by `scripts/setup.sh test` into scripts/node) take it
without a warning, and the Python client drives the shop's routes against a live `loom run` on
SQLite and PostgreSQL.

What makes a document good for a generator (docs/http.md#generated-clients): one schema per name
(never FastAPI's `<package>__<module>__Name` for two of one name), an operationId from the model on
every route (the generated method names), the model's revision as `info.version`, and no answer a
route cannot give.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from uuid import UUID, uuid4

import pytest

from loom.testing import build_service
from tests.conftest import create_pg_database
from tests.liveserver import ROOT, free_port, running
from tests.waiting import wait_until

EXAMPLES = {
    "banking": ["examples/banking/banking.loom"],
    "sales": ["examples/sales/sales.loom", "examples/sales/onboarding.loom"],
    "scheduling": ["examples/scheduling/scheduling.loom"],
    "shop": ["examples/shop/shop.loom"],
    "support": ["examples/support/support.loom"],
}
NODE_BIN = ROOT / "scripts/node/node_modules/.bin"
# the operationId scheme: a name of the model, or `<Owner>_<verb or model name>`
OPERATION_ID = re.compile(r"^[A-Za-z][A-Za-z0-9]*(_[a-z][A-Za-z0-9]*)?$")


def _document(model: str, folder: Path) -> tuple[dict[str, Any], str]:
    """The example's OpenAPI document (no database needed to draw it) and its model revision."""
    main = build_service([ROOT / f for f in EXAMPLES[model]])
    app = main.build_app(f"sqlite+aiosqlite:///{folder / 'unused.db'}")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        document = app.openapi()
    # FastAPI warns of two routes with one operationId ("Duplicate Operation ID")
    assert not said, [str(w.message) for w in said]
    return document, main.MODEL_REVISION


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def document(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, dict[str, Any], str]:
    model = request.param
    folder = tmp_path_factory.mktemp(model)
    doc, revision = _document(model, folder)
    path = folder / "openapi.json"
    path.write_text(json.dumps(doc))
    return model, path, doc, revision


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield method, path, op


def test_the_document_names_every_schema_and_operation_from_the_model(
    document: tuple[str, Path, dict[str, Any], str],
) -> None:
    _, _, doc, revision = document
    names = list(doc["components"]["schemas"])
    # FastAPI qualifies two schemas of one name with their module path (`loom__runtime__…`)
    assert not [n for n in names if re.match(r"^[a-z0-9_]+__", n)], names
    assert doc["info"]["version"] == revision
    ids = [op.get("operationId") for _, _, op in _operations(doc)]
    assert all(isinstance(i, str) and OPERATION_ID.match(i) for i in ids), ids
    assert len(ids) == len(set(ids)), ids
    for method, path, op in _operations(doc):
        if method == "get":  # a read writes nothing and takes no body
            assert not {"409", "413"} & set(op["responses"]), (path, op["responses"])


def test_the_shop_operation_ids(tmp_path: Path) -> None:
    doc, _ = _document("shop", tmp_path)
    ids = {(m, p): op["operationId"] for m, p, op in _operations(doc)}
    assert ids[("post", "/api/workflows/place_order")] == "placeOrder"
    assert ids[("get", "/api/orders/{id}")] == "Order_get"
    assert ids[("get", "/api/orders")] == "Order_list"
    assert ids[("post", "/api/orders")] == "Order_create"
    assert ids[("patch", "/api/orders/{id}")] == "Order_update"
    assert ids[("delete", "/api/orders/{id}")] == "Order_delete"
    instance = "/api/workflows/payment_deadline/instances/{id}"
    assert ids[("get", instance)] == "PaymentDeadline_getInstance"
    assert ids[("get", instance + "/episodes")] == "PaymentDeadline_listEpisodes"
    assert ids[("get", "/api/projections/order_progress")] == "OrderProgress_list"
    assert ids[("get", "/api/admin/timers")] == "admin_listTimers"


def _tool_path() -> str:
    # openapi-python-client formats what it writes with `ruff`, looked up on PATH
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _python_client(document: Path, out: Path, package: str) -> subprocess.CompletedProcess[str]:
    config = out.parent / f"{package}.json"
    config.write_text(json.dumps({"package_name_override": package}))
    args = ["generate", "--path", str(document), "--output-path", str(out), "--meta", "none"]
    generator = Path(sys.executable).with_name("openapi-python-client")
    return subprocess.run(
        [str(generator), *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": _tool_path()},
        check=False,
        timeout=240,
    )


def test_openapi_python_client_generates_a_client_without_a_warning(
    document: tuple[str, Path, dict[str, Any], str],
) -> None:
    model, path, doc, _ = document
    out = path.parent / f"{model}_client"
    done = _python_client(path, out, f"{model}_client")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "warning" not in said.lower(), said
    # every route is a module of the client, named after its operationId
    modules = {p.stem for p in (out / "api").rglob("*.py") if p.stem != "__init__"}
    assert len(modules) == sum(1 for _ in _operations(doc)), sorted(modules)


def _node_tool(name: str) -> Path:
    tool = NODE_BIN / name
    if not tool.exists():
        message = f"{tool} is missing: run `bash scripts/setup.sh test` (it installs scripts/node)"
        if os.environ.get("LOOM_REQUIRE_NODE"):
            pytest.fail(message)
        pytest.skip(message)
    return tool


def test_openapi_typescript_generates_types_that_compile_without_a_warning(
    document: tuple[str, Path, dict[str, Any], str],
) -> None:
    model, path, doc, _ = document
    generator, compiler = _node_tool("openapi-typescript"), _node_tool("tsc")
    types = path.parent / f"{model}.ts"
    done = subprocess.run(
        [str(generator), str(path), "-o", str(types)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "warn" not in said.lower() and "error" not in said.lower(), said
    text = types.read_text()
    for _, _, op in _operations(doc):
        assert f'operations["{op["operationId"]}"]' in text
    done = subprocess.run(
        [str(compiler), "--noEmit", "--strict", str(types)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def shop_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The shop's generated Python client package, importable as `shop_client`."""
    folder = tmp_path_factory.mktemp("shop_client")
    doc, _ = _document("shop", folder)
    path = folder / "openapi.json"
    path.write_text(json.dumps(doc))
    done = _python_client(path, folder / "shop_client", "shop_client")
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("shop_client")
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n.split(".")[0] == "shop_client"]:
            del sys.modules[name]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shop_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    model = shutil.copy(ROOT / EXAMPLES["shop"][0], tmp_path / "shop.loom")
    args = []  # SQLite: the default file beside the model
    if request.param == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        args = ["--database-url", cluster.url(create_pg_database(cluster))]
    with running(str(model), *args, port=free_port()) as base:
        yield base


def _api(client: ModuleType, module: str) -> Any:
    return importlib.import_module(f"{client.__name__}.api.{module}")


def test_the_generated_python_client_drives_the_shop(
    shop_client: ModuleType, shop_url: str
) -> None:
    models = importlib.import_module("shop_client.models")
    client = shop_client.Client(base_url=shop_url, raise_on_unexpected_status=True)
    with client:
        placed = _api(shop_client, "orders_workflows.place_order").sync(
            client=client, body=models.PlaceOrderInput(sku="book", quantity=2, fail_payment=False)
        )
        assert isinstance(placed, UUID)
        order = _api(shop_client, "orders_order.order_get").sync(client=client, id=placed)
        assert isinstance(order, models.OrderOut)
        assert (order.id, order.sku, order.quantity) == (placed, "book", 2)

        page = _api(shop_client, "orders_order.order_list").sync(client=client, limit=10)
        assert isinstance(page, models.PageOrderOut)
        assert [o.id for o in page.items] == [placed] and page.total == 1

        # the process instance: the model a client generator dropped while two schemas shared
        # the name PendingTimeoutOut
        get_instance = _api(shop_client, "orders_workflows.payment_deadline_get_instance")

        def instance() -> Any:
            answer = get_instance.sync(client=client, id=placed)
            return answer if isinstance(answer, models.PaymentDeadlineInstanceOut) else None

        found = wait_until(instance, timeout=30, what="the payment deadline's instance")
        assert found.order == placed and isinstance(found.timeouts, list)

        # a problem answer is the Problem model, with the urn:loom:problem type
        missing = _api(shop_client, "orders_order.order_get").sync(client=client, id=uuid4())
        assert isinstance(missing, models.Problem)
        assert missing.type_ == "urn:loom:problem:not-found" and missing.status == 404
