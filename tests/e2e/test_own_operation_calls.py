"""An operation may call the other operations of its own aggregate, private ones included. The
called operation runs whole (gate, preconditions, assignments, events, invariants), a refusal in
it refuses the outer call with nothing saved, and a private operation still has no route."""

from __future__ import annotations

from pathlib import Path

from loom.testing import serve

MODEL = """
context Shop {
  event Bumped { counter: Counter id, n: int }
  aggregate Counter with crudish {
    n: int = 0
    open: bool = true
    invariant n <= 10 message "a counter stops at 10"
    private operation bump(by: int) when open {
      precondition by > 0 message "by must be positive"
      n += by
      emit Bumped { counter: id, n: n }
    }
    operation bumpTwice(by: int) {
      bump(by)
      bump(by)
    }
    operation close() { open := false }
  }
  repository Counters for Counter { }
}
"""


async def test_an_operation_runs_a_private_sibling(database_url: str, tmp_path: Path) -> None:
    model = tmp_path / "shop.loom"
    model.write_text(MODEL)
    async with serve([model], database_url) as c:
        seen: list[int] = []
        bumped = c.module("shop.domain").Bumped

        async def on_bumped(event: object) -> None:
            seen.append(event.n)  # type: ignore[attr-defined]

        c.service.events.subscribe(bumped, on_bumped)
        counter = (await c.post("/api/counters", json={})).json()["id"]

        r = await c.post(f"/api/counters/{counter}/bump_twice", json={"by": 2})
        assert r.status_code == 204, r.text
        body = (await c.get(f"/api/counters/{counter}")).json()
        assert body["n"] == 4 and body["version"] == 2
        assert seen == [2, 4]

        # the private operation has no route of its own
        r = await c.post(f"/api/counters/{counter}/bump", json={"by": 1})
        assert r.status_code in (404, 405), r.text

        # a precondition of the called operation refuses the whole call
        r = await c.post(f"/api/counters/{counter}/bump_twice", json={"by": 0})
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == "by must be positive"

        # the invariant, checked as each inner call ends, refuses the second: nothing is saved
        r = await c.post(f"/api/counters/{counter}/bump_twice", json={"by": 4})
        assert r.status_code == 422, r.text
        assert r.json()["type"] == "urn:loom:problem:invariant-failed"
        body = (await c.get(f"/api/counters/{counter}")).json()
        assert body["n"] == 4 and body["version"] == 2
        assert seen == [2, 4]

        # the called operation's `when` gate applies too
        assert (await c.post(f"/api/counters/{counter}/close", json={})).status_code == 204
        r = await c.post(f"/api/counters/{counter}/bump_twice", json={"by": 1})
        assert r.status_code == 422, r.text
        assert r.json()["type"] == "urn:loom:problem:state-gate-refused"


WORDS = """
context Tasks {
  aggregate Task with crudish {
    state: string = "open"
    steps: int = 0
    operation cancel() { state := "cancelled" }
    operation complete(by: int) { steps += by }
    operation schedule() { steps += 10 }
    operation wrapUp() {
      schedule()
      complete(2)
      cancel()
    }
  }
  repository Tasks for Task { }
}
"""


async def test_siblings_named_like_timeout_statements(database_url: str, tmp_path: Path) -> None:
    """`cancel()`, `complete(…)` and `schedule()` at the start of a statement call the sibling
    operations of those names (`cancel NAME`, `complete` and `schedule NAME …` keep their meaning
    in workflows)."""
    model = tmp_path / "tasks.loom"
    model.write_text(WORDS)
    async with serve([model], database_url) as c:
        task = (await c.post("/api/tasks", json={})).json()["id"]
        r = await c.post(f"/api/tasks/{task}/wrap_up")
        assert r.status_code == 204, r.text
        body = (await c.get(f"/api/tasks/{task}")).json()
        assert (body["state"], body["steps"]) == ("cancelled", 12)
