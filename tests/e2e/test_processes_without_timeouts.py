"""A workflow that completes but never schedules a timeout keeps the process tables all the same:
`complete` disarms the instance's timers and closes its episode (issue 13 §4). The model is the
`once` example of docs/language.md, read from the docs themselves, plus a command `create` that
ends in `complete`; over HTTP on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from loom.testing import serve

DOCS = Path(__file__).resolve().parents[2] / "docs" / "language.md"
COMMAND = """
context Desk {
  aggregate Case with crudish { title: string }
  repository Cases for Case { }
  workflow closeCase {
    case: Case id
    create(case: Case id) {
      complete
    }
  }
}
"""


def docs_example() -> str:
    """The `FirstNotice once` block of docs/language.md, with a way to fail a payment."""
    blocks = re.findall(r"```loom\n(.*?)```", DOCS.read_text(), flags=re.DOTALL)
    (block,) = [b for b in blocks if "workflow FirstNotice once" in b]
    return block.replace(
        "aggregate Subscription {",
        "aggregate Subscription with crudish {\n"
        "    operation fail() { emit PaymentFailed { subscription: id } }",
    )


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    path = tmp_path / "billing.loom"
    path.write_text(docs_example() + COMMAND)
    return [path]


async def test_the_docs_once_example_notices_once_and_keeps_its_episode(
    files: list[Path], database_url: str
) -> None:
    async with serve(files, database_url) as c:
        sub = (await ok(await c.post("/api/subscriptions", json={}), 201))["id"]
        for _ in range(3):
            await ok(await c.post(f"/api/subscriptions/{sub}/fail"), 204)
            await c.settle()
        assert (await ok(await c.get(f"/api/subscriptions/{sub}")))["notices"] == 1
        instance = await ok(await c.get(f"/api/workflows/first_notice/instances/{sub}"))
        assert (instance["ended"], instance["episode"], instance["timeouts"]) == (True, 1, [])
        episodes = await ok(await c.get(f"/api/workflows/first_notice/instances/{sub}/episodes"))
        assert [(e["episode"], e["status"]) for e in episodes] == [(1, "completed")]
        dead = await ok(await c.get("/api/admin/dead-letters"))
        assert dead["total"] == 0


async def test_a_command_create_that_completes_answers_and_runs_again(
    files: list[Path], database_url: str
) -> None:
    async with serve(files, database_url) as c:
        case = (await ok(await c.post("/api/cases", json={"title": "printer"}), 201))["id"]
        for _ in range(2):
            await ok(await c.post("/api/workflows/close_case", json={"case": case}), 204)
        episodes = await ok(await c.get(f"/api/workflows/close_case/instances/{case}/episodes"))
        assert [(e["episode"], e["status"]) for e in episodes] == [
            (1, "completed"),
            (2, "completed"),
        ]
