"""A body that deletes an aggregate on one path and changes it on another persists exactly what the
path it took did: the delete, or the change, never neither and never a resurrection."""

from __future__ import annotations

from pathlib import Path

from loom.testing import serve

MODEL = """
context Desk {
  aggregate Note with crudish {
    text: string
    archived: bool = false
    operation archive() { archived := true }
  }
  repository Notes for Note { }

  commandHandler Tidy(note: Note id, drop: string?) {
    let n = Notes.getById(note)
    if let reason = drop {
      Notes.delete(n)
    } else {
      n.archive()
    }
  }
}
"""


async def test_delete_on_one_branch_and_change_on_the_other(
    database_url: str, tmp_path: Path
) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(MODEL)
    async with serve([model], database_url) as c:
        kept = (await c.post("/api/notes", json={"text": "keep"})).json()["id"]
        dropped = (await c.post("/api/notes", json={"text": "drop"})).json()["id"]

        r = await c.post("/api/commands/tidy", json={"note": kept, "drop": None})
        assert r.status_code == 204, r.text
        note = (await c.get(f"/api/notes/{kept}")).json()
        assert note["archived"] is True and note["version"] == 2

        r = await c.post("/api/commands/tidy", json={"note": dropped, "drop": "spam"})
        assert r.status_code == 204, r.text
        assert (await c.get(f"/api/notes/{dropped}")).status_code == 404
