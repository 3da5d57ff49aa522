"""A deployable's database created before migrations, after a change of the model (issue 26
§5.5), on SQLite and PostgreSQL: `loom run --deployable` (what `loom up` starts) refuses it with
how to baseline it from the model it was created with, `loom migrate new` says the same before it
writes a first migration from the model now, and following the advice serves the old rows under
the new model."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.liveserver import free_port, refused_start, running
from tests.migrate.test_deployables import V1, loom

# a field renamed: no `--migrate` can apply it, only migrations
V2 = V1.replace("    email: string\n", "    mail: string renamed from email\n", 1).replace(
    "email: email }", "email: mail }"
)


def test_the_refusal_says_how_to_baseline_and_it_works(tmp_path: Path, database_url: str) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(V1, encoding="utf-8")
    url = ["--database-url", database_url]
    front = ["--deployable", "Front"]
    with running(str(model), *front, *url, port=free_port()) as base:
        created = httpx.post(f"{base}/api/tickets", json={"email": "ann@example.test"})
        assert created.status_code == 201, created.text
    ticket = created.json()["id"]
    model.write_text(V2, encoding="utf-8")

    said = refused_start(str(model), *front, *url)
    assert "column desk_tickets.mail is missing" in said, said
    assert "Baseline it from the model it was created with" in said
    assert f"`loom migrate new {model} --deployable Front -m baseline`" in said
    assert f"`loom migrate apply {model} --deployable Front --database-url" in said
    # `migrate new` from the model now would write a baseline that never applies: it says so
    r = loom("migrate", "new", model, *front, *url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "this first migration would never apply to it" in r.stdout, r.stdout
    for written in (tmp_path / "migrations" / "front").iterdir():
        written.unlink()

    # the advice, followed
    model.write_text(V1, encoding="utf-8")
    r = loom("migrate", "new", model, *front, *url, "-m", "baseline")
    assert r.returncode == 0 and "never apply" not in r.stdout, r.stdout + r.stderr
    model.write_text(V2, encoding="utf-8")
    r = loom("migrate", "new", model, *front, *url, "-m", "mail")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rename column desk_tickets.email to mail" in r.stdout
    r = loom("migrate", "apply", model, *front, *url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "baseline: the tables were already those of 0001_baseline" in r.stdout
    assert "applied 0002_mail" in r.stdout
    with running(str(model), *front, *url, port=free_port()) as base:
        got = httpx.get(f"{base}/api/tickets/{ticket}")
        assert got.status_code == 200 and got.json()["mail"] == "ann@example.test", got.text
