"""No crash on any input: the front end's fuzz inputs (tests/lang/test_fuzz.py: mutated example
models, random text) replayed through one running server as edits of an open document, each
followed by requests at random places; the server answers every one and logs no failure."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from tests.lang.test_fuzz import mutated
from tests.lsp.conftest import Editor

_EDITS = st.one_of(mutated(), st.text(max_size=400))
_WHERE = st.builds(lsp.Position, line=st.integers(0, 60), character=st.integers(0, 80))
_ONE_SERVER = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=200, deadline=None, suppress_health_check=_ONE_SERVER)
@given(text=_EDITS, where=_WHERE)
async def test_the_server_answers_after_every_edit(
    editor: Editor, text: str, where: lsp.Position
) -> None:
    if "fuzz.loom" not in editor.opened:
        editor.open("fuzz.loom", "")
        editor.opened.add("fuzz.loom")
    editor.version += 1
    editor.change("fuzz.loom", text, editor.version)
    doc = editor.doc("fuzz.loom")
    # each request compiles the edit first (its model has a compile pending), then answers
    await editor.client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=doc)
    )
    await editor.client.text_document_hover_async(
        lsp.HoverParams(text_document=doc, position=where)
    )
    await editor.client.text_document_completion_async(
        lsp.CompletionParams(text_document=doc, position=where)
    )
    await editor.client.text_document_definition_async(
        lsp.DefinitionParams(text_document=doc, position=where)
    )
    failures = [m.message for m in editor.client.log_messages if m.type == lsp.MessageType.Error]
    assert failures == []
    assert all(d.code != "loom.internal-error" for d in editor.client.diagnostics.get(doc.uri, []))
