"""The protocol's handlers: each turns its request into a question to the model's index and the
answer into the protocol's types. What they answer is computed in the modules beside this one.

Diagnostics are published for every file of a model when one of its documents opens, and after a
change: at once for a change after a pause, `DEBOUNCE` seconds after the last one while changes
keep coming (typing a word compiles at its first letter and after its last). A request about a
document whose model has a compile pending compiles it first, so no answer reads a stale index.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable
from typing import TypeVar

import attrs
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from loom.lang.format import format_source
from loom.lsp import actions, completion, hover, symbols
from loom.lsp.convert import one_based, path_of, position_at, to_diagnostic, to_location, uri_of
from loom.lsp.index import Index, Symbol
from loom.lsp.models import Model, Models
from loom.lsp.positions import Columns

DEBOUNCE = 0.15  # seconds after the last change before the model is compiled again

_P = TypeVar("_P")
_R = TypeVar("_R")


class LoomServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("loom", _version())
        self.models = Models()
        self.pending: dict[str, asyncio.TimerHandle | asyncio.Handle] = {}  # folder -> compile
        self.compiled: dict[str, float] = {}  # folder -> when its last compile ended (loop time)
        self.published: dict[str, list[lsp.Diagnostic]] = {}  # path -> what the client shows

    def refresh(self, folder: str) -> Model:
        """Compile a model now and publish its diagnostics, per file (an empty list clears; a
        file whose diagnostics are the ones the client shows already is left alone)."""
        handle = self.pending.pop(folder, None)
        if handle is not None:
            handle.cancel()
        model = self.models.compile(folder)
        self.compiled[folder] = asyncio.get_running_loop().time()
        assert model.result is not None
        by_file: dict[str, list[lsp.Diagnostic]] = {p: [] for p in self.models.files_of(folder)}
        for d in model.result.diagnostics:
            by_file.setdefault(d.span.file, []).append(to_diagnostic(d))
        columns = self.columns
        for path, diagnostics in by_file.items():
            if self.published.get(path) == diagnostics:
                continue
            self.published[path] = diagnostics
            uri = uri_of(path)
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(
                    uri=uri, diagnostics=columns.outgoing(diagnostics, uri)
                )
            )
        return model

    def later(self, folder: str) -> None:
        handle = self.pending.pop(folder, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        if loop.time() - self.compiled.get(folder, 0.0) > DEBOUNCE and handle is None:
            # after a pause: as soon as the changes already read are applied
            self.pending[folder] = loop.call_soon(self.scheduled, folder)
        else:
            self.pending[folder] = loop.call_later(DEBOUNCE, self.scheduled, folder)

    def scheduled(self, folder: str) -> None:
        """`refresh` from the loop's timer, whose failure no request would report."""
        try:
            self.refresh(folder)
        except Exception:  # noqa: BLE001 - the boundary: one failed compile, not a dead server
            self.log_failure("compiling " + folder)

    def log_failure(self, what: str) -> None:
        # to the editor's log, where a user finds it to report (and the tests look)
        self.window_log_message(
            lsp.LogMessageParams(
                lsp.MessageType.Error, f"loom lsp: {what} failed\n{traceback.format_exc()}"
            )
        )

    @property
    def columns(self) -> Columns:
        return Columns(
            self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16, self.models.text
        )

    def model_at(self, uri: str) -> tuple[str, Model]:
        path = path_of(uri)
        folder = self.models.folder_of(path)
        if folder in self.pending:
            return path, self.refresh(folder)
        return path, self.models.model(path)

    def symbol_at(self, uri: str, position: lsp.Position) -> tuple[Index, Symbol] | None:
        path, model = self.model_at(uri)
        if model.index is None:
            return None
        line, column = one_based(position)
        sym = model.index.at(path, line, column)
        return (model.index, sym) if sym is not None else None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("loom")
    except PackageNotFoundError:
        return "0"


server = LoomServer()


def answering(
    handler: Callable[[LoomServer, _P], _R | None],
) -> Callable[[LoomServer, _P], _R | None]:
    """A handler with its positions in characters (`positions.Columns` converts at the edge),
    which, when it fails, answers nothing and logs why: no input may crash the server, and an
    editor shows nothing rather than an error for one request."""

    def run(ls: LoomServer, params: _P) -> _R | None:
        try:
            uri: str = getattr(getattr(params, "text_document", None), "uri", "")
            position = getattr(params, "position", None)
            if isinstance(position, lsp.Position):
                params = attrs.evolve(params, position=ls.columns.incoming(uri, position))  # type: ignore[misc]  # every request with a position is an attrs class
            answer: _R | None = ls.columns.outgoing(handler(ls, params), uri)
            return answer
        except Exception:  # noqa: BLE001 - the boundary: one bad request, not a dead server
            ls.log_failure(handler.__name__)
            return None

    run.__name__ = handler.__name__
    return run


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
@answering
def did_open(ls: LoomServer, params: lsp.DidOpenTextDocumentParams) -> None:
    path = path_of(params.text_document.uri)
    ls.models.buffers[path] = params.text_document.text
    ls.refresh(ls.models.folder_of(path))


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
@answering
def did_change(ls: LoomServer, params: lsp.DidChangeTextDocumentParams) -> None:
    path = path_of(params.text_document.uri)
    ls.models.buffers[path] = ls.workspace.get_text_document(params.text_document.uri).source
    ls.later(ls.models.folder_of(path))


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
@answering
def did_save(ls: LoomServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.later(ls.models.folder_of(path_of(params.text_document.uri)))


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
@answering
def did_close(ls: LoomServer, params: lsp.DidCloseTextDocumentParams) -> None:
    path = path_of(params.text_document.uri)
    ls.models.buffers.pop(path, None)  # the disk's text is the file's again
    ls.later(ls.models.folder_of(path))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
@answering
def definition(ls: LoomServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
    found = ls.symbol_at(params.text_document.uri, params.position)
    if found is None:
        return None
    _, sym = found
    return [to_location(span) for span in (sym.parts or [sym.name_span])]


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
@answering
def references(ls: LoomServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
    found = ls.symbol_at(params.text_document.uri, params.position)
    if found is None:
        return None
    index, sym = found
    declared = set(sym.parts or [sym.name_span])
    return [
        to_location(span)
        for span in index.uses(sym)
        if params.context.include_declaration or span not in declared
    ]


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
@answering
def on_hover(ls: LoomServer, params: lsp.HoverParams) -> lsp.Hover | None:
    _, model = ls.model_at(params.text_document.uri)
    found = ls.symbol_at(params.text_document.uri, params.position)
    if found is None:
        return None
    index, sym = found
    text = hover.describe(sym, model, index.sources.get(sym.name_span.file, ""))
    return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text))


@server.feature(
    lsp.TEXT_DOCUMENT_COMPLETION,
    lsp.CompletionOptions(trigger_characters=[".", "{", " "]),
)
@answering
def on_completion(ls: LoomServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
    path, model = ls.model_at(params.text_document.uri)
    items = completion.complete(model.index, path, ls.models.text(path), params.position)
    return lsp.CompletionList(is_incomplete=False, items=items)


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@answering
def document_symbols(
    ls: LoomServer, params: lsp.DocumentSymbolParams
) -> list[lsp.DocumentSymbol] | None:
    path, model = ls.model_at(params.text_document.uri)
    return symbols.outline(model.index, path) if model.index is not None else None


@server.feature(lsp.WORKSPACE_SYMBOL)
@answering
def workspace_symbols(
    ls: LoomServer, params: lsp.WorkspaceSymbolParams
) -> list[lsp.WorkspaceSymbol] | None:
    for path in list(ls.models.buffers):
        ls.model_at(uri_of(path))
    for folder in ls.workspace.folders.values():
        # a workspace folder that is a model, though none of its files is open
        root = path_of(folder.uri)
        if root not in ls.models.models and ls.models.files_of(root):
            ls.refresh(root)
    indexes = [m.index for m in ls.models.models.values() if m.index is not None]
    return symbols.workspace(indexes, params.query)


@server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
@answering
def prepare_rename(ls: LoomServer, params: lsp.PrepareRenameParams) -> lsp.Range | None:
    path, _ = ls.model_at(params.text_document.uri)
    found = ls.symbol_at(params.text_document.uri, params.position)
    if found is None:
        return None
    return symbols.rename_range(found[0], found[1], path, params.position)


@server.feature(lsp.TEXT_DOCUMENT_RENAME)
@answering
def rename(ls: LoomServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
    if not symbols.is_name(params.new_name):
        ls.window_show_message(
            lsp.ShowMessageParams(
                lsp.MessageType.Error,
                f"`{params.new_name}` is not a Loom name: a letter or `_`, then letters, digits "
                "or `_`",
            )
        )
        return None
    _, model = ls.model_at(params.text_document.uri)
    if model.stale:
        ls.window_show_message(
            lsp.ShowMessageParams(
                lsp.MessageType.Error,
                "a file of the model does not parse: fix its syntax error, then rename",
            )
        )
        return None
    found = ls.symbol_at(params.text_document.uri, params.position)
    if found is None:
        return None
    return symbols.rename(found[0], found[1], params.new_name)


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
)
@answering
def code_actions(ls: LoomServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
    path, model = ls.model_at(params.text_document.uri)
    return actions.quick_fixes(model, path, ls.models.text(path), params, ls.columns.incoming_range)


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
@answering
def formatting(ls: LoomServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
    """The document in `loom fmt`'s layout (its options are the client's: the layout has none),
    as one edit of the whole text; none when it is in that layout already."""
    path = path_of(params.text_document.uri)
    text = ls.models.text(path)
    formatted = format_source(text, path)
    if formatted.text is None:
        ls.window_show_message(
            lsp.ShowMessageParams(
                lsp.MessageType.Error, "the file does not parse: fix its syntax error, then format"
            )
        )
        return None
    if formatted.text == text:
        return []
    whole = lsp.Range(lsp.Position(0, 0), position_at(text, len(text)))
    return [lsp.TextEdit(range=whole, new_text=formatted.text)]


def serve() -> None:
    """Speak the protocol over stdin and stdout until the client says exit."""
    server.start_io()
