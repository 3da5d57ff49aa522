"""A real client process driving a real `loom lsp` (`python -m loom lsp`) over stdio, with
pytest-lsp, on a copy of a small multi-file model of tests/lsp/data (a folder is a model)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.waiting import until

DATA = Path(__file__).parent / "data"


@dataclass
class Editor:
    """The client, and the model folder it edits."""

    client: LanguageClient
    folder: Path
    opened: set[str] = field(default_factory=set)
    version: int = 1  # of the last change sent

    def uri(self, name: str) -> str:
        return (self.folder / name).as_uri()

    def open(self, name: str, text: str | None = None) -> str:
        uri = self.uri(name)
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(
                    uri, "loom", 1, text if text is not None else (self.folder / name).read_text()
                )
            )
        )
        return uri

    def change(self, name: str, text: str, version: int) -> None:
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=self.uri(name), version=version),
                [lsp.TextDocumentContentChangeWholeDocument(text)],
            )
        )

    async def diagnostics(
        self,
        name: str,
        check: Callable[[Sequence[lsp.Diagnostic]], bool] | None = None,
        *,
        timeout: float = 10,
    ) -> list[lsp.Diagnostic]:
        """The file's diagnostics once published (and, given `check`, once they satisfy it)."""
        uri = self.uri(name)

        def ready() -> tuple[Sequence[lsp.Diagnostic]] | None:
            found = self.client.diagnostics.get(uri)
            if found is None or (check is not None and not check(found)):
                return None
            return (found,)  # truthy even when there are none

        (got,) = await until(ready, timeout=timeout, what=f"diagnostics of {name}", interval=0.01)
        return list(got)

    def at(self, name: str, needle: str, nth: int = 0, offset: int = 0) -> lsp.Position:
        """The position of the `nth` occurrence of `needle` in the file (plus `offset` chars)."""
        text = (self.folder / name).read_text()
        i = -1
        for _ in range(nth + 1):
            i = text.index(needle, i + 1)
        i += offset
        line = text.count("\n", 0, i)
        return lsp.Position(line, i - (text.rfind("\n", 0, i) + 1))

    def doc(self, name: str) -> lsp.TextDocumentIdentifier:
        return lsp.TextDocumentIdentifier(self.uri(name))


@pytest.fixture
def model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    shutil.copytree(DATA / "store", folder)
    return folder


@pytest_lsp.fixture(  # type: ignore[untyped-decorator]  # pytest-lsp: untyped
    config=ClientServerConfig(server_command=[sys.executable, "-m", "loom", "lsp"]),
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    model_folder: Path = request.getfixturevalue("model_folder")
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
            workspace_folders=[lsp.WorkspaceFolder(model_folder.as_uri(), "store")],
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def editor(client: LanguageClient, model_folder: Path) -> Editor:
    return Editor(client, model_folder)
