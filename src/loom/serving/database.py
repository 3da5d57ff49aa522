"""A service's database as the commands name it: the SQLite file `loom run` keeps beside the model
when no `--database-url` is given (one definition, for `loom run`, `loom up`, `loom migrate`,
`loom dead-letters` and `loom timers`), and a URL fit to print."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from loom.build.sources import NoModelFiles, model_files
from loom.serving.held import Held, OptionError

# `sqlite[+driver]:///PATH[?query]`: PATH relative to the current folder, or `/abs` (four slashes)
_SQLITE_FILE = re.compile(r"sqlite(?:\+\w+)?:///(.*)", re.DOTALL)


def default_database_file(first_file: Path, held: Held | None = None) -> Path:
    """The SQLite file `loom run` uses without --database-url: the whole model's
    `<first model file>.db`, a deployable's (or a set of contexts') `<name>.db` beside it."""
    name = None if held is None else held.name()
    first = first_file.resolve()
    return first.with_suffix(".db") if name is None else first.parent / f"{name}.db"


def default_database(first_file: Path, held: Held | None = None) -> str:
    """The URL of `default_database_file`."""
    return f"sqlite+aiosqlite:///{default_database_file(first_file, held)}"


def safe_url(url: str) -> str:
    """A database URL fit to print: its password hidden."""
    from sqlalchemy.engine import make_url  # only to print one: `loom check` never needs it

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - printing must never fail
        return "<database url>"


def default_url(paths: Sequence[Path], held: Held) -> str:
    """The database `loom run` keeps beside the model its `paths` name (its files, or folders of
    them, as `loom run` takes them; none: the current folder) for the service of `held`: the
    whole model's `<first file>.db`, a deployable's `<deployable>.db`. Raises OptionError with a
    sentence when there is none."""
    for path in paths or [Path.cwd()]:
        if not path.exists():
            raise OptionError(f"{path}: no such file or folder")
    try:
        files = model_files(paths or [Path.cwd()])
    except NoModelFiles as exc:
        raise OptionError(f"{exc}, or pass --database-url") from exc
    # `loom run` names the whole model's database after the first model file it was given; of a
    # folder's files (sorted), the one `loom run FILE…` was given first is the one with a database
    with_db = [f for f in files if default_database_file(f).exists()]
    first = (with_db or files)[0]
    db = default_database_file(first, held)
    if not db.exists():
        raise OptionError(
            f"no database at {db} (has `loom run{held.args()}` served this model?); "
            "pass --database-url for another one"
        )
    return default_database(first, held)


def refuse_missing_sqlite(url: str) -> None:
    """Raise OptionError when `url` names a SQLite file that is not there: opening it would
    create an empty database and read it as one without dead letters or timers (a typo in the
    path passing for a healthy service)."""
    found = _SQLITE_FILE.match(url)
    if found is None:
        return
    name = found.group(1).split("?", 1)[0]
    if name in ("", ":memory:") or name.startswith("file:"):
        return
    if not Path(name).is_file():
        raise OptionError(
            f"no database at {Path(name).resolve()} (the --database-url file is not there; "
            "a SQLite file is never created here)"
        )
