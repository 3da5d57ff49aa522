"""One model in several versions, each a change a live service meets (docs/migrations.md), and
the folders `loom migrate new` makes of them: `folder/vN/store.loom` with the migrations up to N
beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from loom.cli.main import app

_V1 = """\
context Store {
  enum Tier { Basic, Gold }

  aggregate Customer with crudish {
    name: string
    tier: Tier = Basic
    points: int
    tags: string[] = []
  }

  repository Customers for Customer { }
}
"""

# each version: (what changed, its text, the flags of `loom migrate new`)
VERSIONS: list[tuple[str, str, list[str]]] = [
    ("initial", _V1, []),
    (
        "add an optional field",
        _V1.replace("    points: int\n", "    points: int\n    note: string?\n"),
        [],
    ),
]
_V2 = VERSIONS[-1][1]
_V3 = _V2.replace(
    "  repository Customers for Customer { }\n",
    "  repository Customers for Customer { }\n\n"
    "  aggregate Order with crudish {\n    customer: Customer id\n    total: int\n  }\n\n"
    "  repository Orders for Order { }\n",
)
VERSIONS.append(("add an aggregate", _V3, []))
_V4 = _V3.replace("enum Tier { Basic, Gold }", "enum Tier { Basic, Gold, Platinum }")
VERSIONS.append(("add an enum member", _V4, []))
_V5 = _V4.replace("    points: int\n", "")
VERSIONS.append(("remove a field", _V5, ["--allow-data-loss"]))
_V6 = _V5.replace(
    "    note: string?\n", '    note: string?\n    nickname: string = ""\n    vip: bool = false\n'
)
VERSIONS.append(("add defaulted fields", _V6, []))
_V7 = _V6.replace("    name: string\n", "    fullName: string renamed from name\n").replace(
    "enum Tier { Basic, Gold, Platinum }",
    "enum Tier { Basic, Premium renamed from Gold, Platinum }",
)
VERSIONS.append(("rename a field and an enum member", _V7, []))
_V8 = (
    _V7.replace(
        "aggregate Customer with crudish", "aggregate Client renamed from Customer with crudish"
    )
    .replace("repository Customers for Customer", "repository Clients for Client")
    .replace("customer: Customer id", "customer: Client id")
)
VERSIONS.append(("rename an aggregate", _V8, []))
_V9 = _V8.replace(
    "    fullName: string renamed from name\n", "    fullName: string? renamed from name\n"
)
VERSIONS.append(("make a field optional", _V9, []))


def make_corpus(root: Path, versions: int = len(VERSIONS)) -> list[Path]:
    """`root/vN/store.loom` for each version (the first `versions`), each with the migrations
    `loom migrate new` wrote for it on top of the previous version's; the model files, in order."""
    runner = CliRunner()
    files: list[Path] = []
    previous: Path | None = None
    for n, (message, text, flags) in enumerate(VERSIONS[:versions], start=1):
        folder = root / f"v{n}"
        folder.mkdir(parents=True)
        if previous is not None and (previous / "migrations").is_dir():
            shutil.copytree(previous / "migrations", folder / "migrations")
        model = folder / "store.loom"
        model.write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["migrate", "new", str(model), "-m", message, *flags])
        assert result.exit_code == 0, result.output
        files.append(model)
        previous = folder
    return files
