"""A 204 answer carries no `Content-Type` (it has no body), whatever route answers it: a crudish
DELETE and PATCH, an operation, a workflow and a command handler without a result (over HTTP, on
both databases). An answer with a body keeps its JSON content type."""

from __future__ import annotations

from pathlib import Path

import httpx

from loom.testing import serve

MODEL = """
context Desk {
  aggregate Note with crudish {
    text: string
    done: bool = false
    operation finish() { done := true }
  }
  repository Notes for Note { }
  workflow finishNote {
    create(note: Note id) {
      let n = Notes.getById(note)
      n.finish()
    }
  }
  commandHandler Reopen(note: Note id) {
    let n = Notes.getById(note)
    n.finish()
  }
}
"""


def no_content(r: httpx.Response) -> None:
    assert r.status_code == 204, r.text
    assert "content-type" not in r.headers, dict(r.headers)
    assert r.content == b""


async def test_a_204_has_no_content_type(database_url: str, tmp_path: Path) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(MODEL)
    async with serve([model], database_url) as c:
        r = await c.post("/api/notes", json={"text": "a"})
        assert r.status_code == 201 and r.headers["content-type"] == "application/json"
        note = r.json()["id"]
        got = await c.get(f"/api/notes/{note}")
        assert got.headers["content-type"] == "application/json"

        kinds = {
            "operation": await c.post(f"/api/notes/{note}/finish"),
            "workflow": await c.post("/api/workflows/finish_note", json={"note": note}),
            "handler": await c.post("/api/commands/reopen", json={"note": note}),
            "patch": await c.patch(f"/api/notes/{note}", json={"text": "b"}),
            "delete": await c.delete(f"/api/notes/{note}"),
        }
        for kind, r in kinds.items():
            if kind == "patch" and r.status_code == 200:
                assert r.headers["content-type"] == "application/json"
                continue
            no_content(r)
