"""The generated service honours its own OpenAPI document under generated traffic.

Schemathesis reads `/openapi.json` of a live `loom run` server and sends requests built from it,
valid and invalid alike. Whatever it sends, the service never answers 5xx, answers only documented
status codes and content types, and every body matches its documented schema. This is the "never a
500 for anything a client sent" promise, checked against a real server on both databases.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks
from schemathesis.core.result import Ok

from tests.conftest import create_pg_database
from tests.liveserver import ROOT, free_port, running

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]
MODELS = {
    "banking": ["examples/banking/banking.loom"],
    "sales": ["examples/sales/sales.loom", "examples/sales/onboarding.loom"],
    # reactions, durable channels (the relay runs under the traffic), projections, admin routes
    "shop": ["examples/shop/shop.loom"],
}


@pytest.fixture(
    scope="module",
    params=[
        *((m, "sqlite") for m in sorted(MODELS)),
        *(pytest.param((m, "postgres"), marks=pytest.mark.postgres) for m in sorted(MODELS)),
    ],
    ids=lambda p: "-".join(p),
)
def live_service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    model, engine = request.param
    folder = tmp_path_factory.mktemp(model)
    files = [str(shutil.copy(ROOT / rel, folder / Path(rel).name)) for rel in MODELS[model]]
    args = []  # SQLite: the default file beside the model
    if engine == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        args = ["--database-url", cluster.url(create_pg_database(cluster))]
    with running(*files, *args, port=free_port()) as base:
        yield base


def test_generated_traffic_gets_documented_answers(live_service: str) -> None:
    schema = schemathesis.openapi.from_url(f"{live_service}/openapi.json")
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result.err()  # an operation the document gets wrong
        operations.append(result.ok())
    assert len(operations) >= 5

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
        def exercise(case: schemathesis.Case) -> None:
            case.call_and_validate(checks=CHECKS)

        try:
            exercise()
        except Exception as exc:
            raise AssertionError(f"{operation.label}: {exc}") from exc
