"""A factory that reads the aggregate it is still creating: `loom build` stops with the diagnostic
(exit 1, never a traceback); the reads a factory may make work in the generated service."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from loom.testing import serve

ROOT = Path(__file__).resolve().parents[2]

# Each body line reads something of the Ticket that does not exist yet.
READS = {
    "customer := customer": "`customer` is a field",
    "let l = label": "`label` is a derived value",
    "let t = tag()": "`tag(…)` is a function",
    "let me = id": "`id` is read",
}
MODEL = """\
context Support {{
  aggregate Ticket {{
    code: string
    customer: string = ""
    derived label: string = code + customer
    function tag(): string = code + "!"
    create(code: string) {{
      code := code
      {line}
    }}
  }}
  repository Tickets for Ticket {{ }}
}}
"""

# What a factory may read: its parameters, the fields it assigned, and all of it in an emit.
ALLOWED = """\
context Support {
  event Opened { ticket: Ticket id, label: string, tag: string, shown: string }
  aggregate Ticket with crudish {
    code: string
    customer: string
    derived label: string = code + ":" + customer
    function tag(): string = code + "!"
    create(code: string, who: string) {
      code := code
      customer := who
      precondition customer != code message "a customer is not a code"
      let shown = code + "/" + customer
      emit Opened { ticket: id, label: label, tag: tag(), shown: shown }
    }
  }
  repository Tickets for Ticket { }
  projection Openings {
    ticket: Ticket id
    label: string = ""
    tag: string = ""
    shown: string = ""
    on(e: Opened) by e.ticket {
      label := e.label
      tag := e.tag
      shown := e.shown
    }
  }
}
"""


def test_build_stops_on_a_factory_reading_its_aggregate(tmp_path: Path) -> None:
    for line, says in READS.items():
        model = tmp_path / "support.loom"
        model.write_text(MODEL.format(line=line))
        out = tmp_path / "out"
        r = subprocess.run(
            [sys.executable, "-m", "loom.cli", "build", str(model), "-o", str(out)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        text = r.stdout + r.stderr
        assert r.returncode == 1, text
        assert "support.loom:9:" in text and "error[loom.factory-reads-aggregate]" in text, text
        assert says in text and line in text, text
        assert "Traceback" not in text and "ValueError" not in text, text
        assert not out.exists()


async def test_a_factory_reads_what_it_assigned(tmp_path: Path, database_url: str) -> None:
    model = tmp_path / "support.loom"
    model.write_text(ALLOWED)
    async with serve([model], database_url) as c:
        r = await c.post("/api/tickets", json={"code": "T-1", "who": "ann"})
        assert r.status_code == 201, r.text
        t = r.json()
        assert (t["code"], t["customer"], t["label"]) == ("T-1", "ann", "T-1:ann")
        await c.settle()
        r = await c.get(f"/api/projections/openings/{t['id']}")
        assert r.status_code == 200, r.text
        assert {k: r.json()[k] for k in ("label", "tag", "shown")} == {
            "label": "T-1:ann",
            "tag": "T-1!",
            "shown": "T-1/ann",
        }
        r = await c.post("/api/tickets", json={"code": "x", "who": "x"})
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == "a customer is not a code"
