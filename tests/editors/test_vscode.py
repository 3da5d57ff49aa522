"""The VS Code extension (editors/vscode) built as users install it: scripts/vsix.sh makes the
.vsix with npm's @vscode/vsce, and it holds the grammars, the language configuration, the client
and the client's own npm packages (which load under Node from the unpacked extension), and none of
the build's or the tests' tools. The client's choice of server command (server.js) run under Node.

Without Node or the extension's npm packages the tests skip, unless LOOM_REQUIRE_NODE=1
(scripts/test.sh)."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.editors.textmate import EXTENSION, ROOT, node_or_skip

# What the .vsix must hold (the extension's files are under extension/)
FILES = (
    "extension.js",
    "server.js",
    "package.json",
    "language-configuration.json",
    "syntaxes/loom.tmLanguage.json",
    "syntaxes/loom-markdown.tmLanguage.json",
    "node_modules/vscode-languageclient/lib/node/main.js",
)
# The build's and the tests' npm packages and files, which it must not
LEFT_OUT = (
    "node_modules/@vscode/",
    "node_modules/vscode-textmate/",
    "node_modules/vscode-oniguruma/",
    "node_modules/tm-grammars/",
    "test/",
)


def _caret(version: str) -> tuple[int, ...]:
    m = re.fullmatch(r"\^(\d+)\.(\d+)\.(\d+)", version)
    assert m, version
    return tuple(int(x) for x in m.groups())


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    node_or_skip("@vscode/vsce")
    out = tmp_path_factory.mktemp("vsix")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/vsix.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = out.glob("*.vsix")
    return built


def test_the_vsix_holds_the_extension_and_its_client(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as z:
        names = {n.removeprefix("extension/") for n in z.namelist()}
        manifest: dict[str, Any] = json.loads(z.read("extension/package.json"))
        client = json.loads(z.read("extension/node_modules/vscode-languageclient/package.json"))
        comments = json.loads(z.read("extension/language-configuration.json"))["comments"]
    assert set(FILES) <= names
    assert not [n for n in names if n.startswith(LEFT_OUT)]
    # the client's dependencies ride along (vsce takes the production ones of the lockfile)
    for package in client["dependencies"]:
        assert f"node_modules/{package}/package.json" in names, package
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert vsix.name == f"loom-{pyproject['project']['version']}.vsix"
    assert manifest["version"] == pyproject["project"]["version"]
    assert manifest["main"] == "./extension.js"
    # the engine declared is one the client supports
    assert _caret(manifest["engines"]["vscode"]) >= _caret(client["engines"]["vscode"])
    [language] = manifest["contributes"]["languages"]
    assert (language["id"], language["extensions"]) == ("loom", [".loom"])
    grammars = {g["scopeName"]: g for g in manifest["contributes"]["grammars"]}
    assert grammars["source.loom"]["language"] == "loom"
    assert grammars["markdown.loom.codeblock"]["injectTo"] == ["text.html.markdown"]
    assert {g["path"].removeprefix("./") for g in grammars.values()} <= names
    settings = manifest["contributes"]["configuration"]["properties"]
    assert settings["loom.server.path"]["default"] == ""
    assert settings["loom.server.args"]["default"] == ["lsp"]
    # in Restricted Mode: highlighting, but no program of the workspace run as the server
    trust = manifest["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited"
    assert set(trust["restrictedConfigurations"]) == set(settings)
    assert comments == {"lineComment": "//", "blockComment": ["/*", "*/"]}


def test_the_unpacked_client_loads_its_packages(vsix: Path, tmp_path: Path) -> None:
    """Every package the client needs loads from the extension's own node_modules (all but
    `vscode` itself, which only the editor provides), and every regular expression of the
    language configuration compiles as JavaScript."""
    node = node_or_skip("@vscode/vsce")
    with zipfile.ZipFile(vsix) as z:
        z.extractall(tmp_path)
    script = """
      const root = process.argv[1];
      const fromExtension = (p) => require(require.resolve(p, { paths: [root] }));
      for (const p of ["vscode-languageserver-protocol/node", "vscode-jsonrpc/node",
                       "minimatch", "semver"]) fromExtension(p);
      require.resolve("vscode-languageclient/node", { paths: [root] });
      const config = require(root + "/language-configuration.json");
      const rules = config.indentationRules;
      for (const r of [config.wordPattern, rules.increaseIndentPattern, rules.decreaseIndentPattern,
                       ...config.onEnterRules.flatMap((e) => [e.beforeText, e.afterText])])
        if (r !== undefined) new RegExp(r);
      // a line that opens a block indents the next; one that closes it, or a comment, does not
      const indents = (line) => new RegExp(rules.increaseIndentPattern).test(line);
      const ok = indents("  aggregate Order {") && indents("    on(e: Paid,") &&
        !indents("  x := 1 // {") && !indents("  emit Paid { order: id }") &&
        new RegExp(rules.decreaseIndentPattern).test("  }");
      process.stdout.write(ok ? "ok" : "indentation rules");
    """
    extension = tmp_path / "extension"
    done = subprocess.run(
        [node, "-e", script, str(extension)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,  # nowhere near the repository's node_modules
    )
    assert (done.returncode, done.stdout) == (0, "ok"), done.stderr
    done = subprocess.run(
        [node, "--check", str(extension / "extension.js")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _server(folders: list[Path], path: str = "", args: list[str] | None = None) -> Any:
    node = node_or_skip("vscode-languageclient")
    query = {"configured": path, "args": args, "folders": [str(f) for f in folders]}
    script = "process.stdout.write(JSON.stringify(require(process.argv[1]).serverCommand(JSON.parse(process.argv[2]))))"
    done = subprocess.run(
        [node, "-e", script, str(EXTENSION / "server.js"), json.dumps(query)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_server_is_the_workspaces_loom_unless_set(tmp_path: Path) -> None:
    bare, project = tmp_path / "bare", tmp_path / "project"
    loom = project / ".venv/bin/loom"
    loom.parent.mkdir(parents=True)
    loom.write_text("#!/bin/sh\n")
    bare.mkdir()
    # no setting: the first folder with a .venv holding loom, else `loom` on PATH
    assert _server([bare, project]) == {"command": str(loom), "args": ["lsp"], "cwd": str(bare)}
    assert _server([bare])["command"] == "loom"
    assert _server([])["command"] == "loom"
    # a setting: a command name as is, a relative path from the first folder
    assert _server([project], "loom-dev", ["lsp", "--verbose"])["args"] == ["lsp", "--verbose"]
    assert _server([project], "loom-dev")["command"] == "loom-dev"
    assert _server([project], "tools/loom")["command"] == str(project / "tools/loom")
    assert _server([project], "${workspaceFolder}/bin/loom")["command"] == str(project / "bin/loom")
    assert _server([bare], "/opt/loom/bin/loom")["command"] == "/opt/loom/bin/loom"
    assert _server([bare], str(loom))["command"] == str(loom)
