"""A repository `filter` hides rows from every read through it: the body reads, the GET routes,
the declared finds and the operation routes. A body read widens itself with `ignoring`."""

from __future__ import annotations

from pathlib import Path

from loom.testing import serve

MODEL = """
context Desk {
  aggregate Note with crudish {
    text: string
    archived: bool = false
    operation archive() { archived := true }
    operation restore() { archived := false }
  }
  criterion Live of Note = !archived
  repository Notes for Note {
    filter Live
    find byText(text: string): Note?
  }
  commandHandler Restore(id: Note id) {
    let n = Notes.getById(id) ignoring Live
    n.restore()
  }
  commandHandler RestoreByText(text: string) {
    if let n = Notes.byText(text) ignoring Live { n.restore() } else { notFound "no such note" }
  }
  commandHandler Touch(id: Note id) {
    let n = Notes.getById(id)
    n.archive()
  }
}
"""


async def test_filters_hide_rows_and_ignoring_widens(database_url: str, tmp_path: Path) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(MODEL)
    async with serve([model], database_url) as c:
        kept = (await c.post("/api/notes", json={"text": "keep"})).json()["id"]
        gone = (await c.post("/api/notes", json={"text": "gone"})).json()["id"]
        assert (await c.post(f"/api/notes/{gone}/archive", json={})).status_code == 204

        # every read through the repository applies the filter
        assert (await c.get(f"/api/notes/{gone}")).status_code == 404
        page = (await c.get("/api/notes")).json()
        assert [n["id"] for n in page["items"]] == [kept] and page["total"] == 1
        r = await c.get("/api/notes/find/by_text", params={"text": "gone"})
        assert r.status_code == 404
        r = await c.post(f"/api/notes/{gone}/restore", json={})
        assert r.status_code == 404, r.text
        r = await c.post("/api/commands/touch", json={"id": gone})
        assert r.status_code == 404, r.text

        # `ignoring Live` widens the body's read
        r = await c.post("/api/commands/restore", json={"id": gone})
        assert r.status_code == 204, r.text
        back = (await c.get(f"/api/notes/{gone}")).json()
        assert back["archived"] is False and back["version"] == 3

        assert (await c.post(f"/api/notes/{gone}/archive", json={})).status_code == 204
        r = await c.post("/api/commands/restore_by_text", json={"text": "gone"})
        assert r.status_code == 204, r.text
        assert (await c.get(f"/api/notes/{gone}")).status_code == 200
        r = await c.post("/api/commands/restore_by_text", json={"text": "never"})
        assert r.status_code == 404 and r.json()["detail"] == "no such note"


KEYED = """
context Desk {
  aggregate Note with crudish {
    code: string
    secret: string = ""
    archived: bool = false
    unique (code)
    operation archive() { archived := true }
  }
  criterion Live of Note = !archived
  repository Notes for Note { filter Live }
}
"""


async def test_a_hidden_row_keeps_its_key_and_the_409_tells_nothing_else(
    database_url: str, tmp_path: Path
) -> None:
    """A unique key holds over hidden rows too (language.md, Filters): the clash is a 409 that
    names the key, never the hidden row's id or fields, and the hidden row stays a 404."""
    model = tmp_path / "desk.loom"
    model.write_text(KEYED)
    async with serve([model], database_url) as c:
        hidden = (await c.post("/api/notes", json={"code": "N-1", "secret": "s3cr3t"})).json()
        assert (await c.post(f"/api/notes/{hidden['id']}/archive", json={})).status_code == 204
        r = await c.post("/api/notes", json={"code": "N-1"})
        assert r.status_code == 409, r.text
        problem = r.json()
        assert (problem["type"], problem["key"]) == ("urn:loom:problem:duplicate-key", ["code"])
        assert problem["detail"] == "another Note already has this code"
        assert hidden["id"] not in r.text and "s3cr3t" not in r.text
        assert (await c.get(f"/api/notes/{hidden['id']}")).status_code == 404
        assert (await c.get("/api/notes")).json()["total"] == 0
