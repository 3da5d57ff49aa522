"""A loaded aggregate is written only when the path the body took changed it: an operation called
on one branch of an `if` does not bump the version when the other branch ran (over HTTP, on both
databases)."""

from __future__ import annotations

from pathlib import Path

from loom.testing import serve

MODEL = """
context Counting {
  aggregate Counter with crudish {
    n: int = 0
    operation bump() { n += 1 }
    operation stay() { n := n }
  }
  repository Counters for Counter { }
  workflow maybeBump {
    create(counter: Counter id, yes: bool) {
      let c = Counters.getById(counter)
      if yes { c.bump() }
    }
  }
  workflow eitherWay {
    create(counter: Counter id, yes: bool) {
      let c = Counters.getById(counter)
      if yes { c.bump() } else { c.stay() }
    }
  }
}
"""


async def test_the_branch_that_did_not_run_saves_nothing(database_url: str, tmp_path: Path) -> None:
    model = tmp_path / "counting.loom"
    model.write_text(MODEL)
    async with serve([model], database_url) as c:
        counter = (await c.post("/api/counters", json={})).json()["id"]

        async def version() -> tuple[int, int]:
            body = (await c.get(f"/api/counters/{counter}")).json()
            return body["n"], body["version"]

        assert await version() == (0, 1)
        r = await c.post("/api/workflows/maybe_bump", json={"counter": counter, "yes": False})
        assert r.status_code in (200, 204), r.text
        assert await version() == (0, 1)
        r = await c.post("/api/workflows/maybe_bump", json={"counter": counter, "yes": True})
        assert r.status_code in (200, 204), r.text
        assert await version() == (1, 2)
        # an operation that ran and left every field as it was writes nothing either
        r = await c.post("/api/workflows/either_way", json={"counter": counter, "yes": False})
        assert r.status_code in (200, 204), r.text
        assert await version() == (1, 2)
        r = await c.post("/api/workflows/either_way", json={"counter": counter, "yes": True})
        assert r.status_code in (200, 204), r.text
        assert await version() == (2, 3)
