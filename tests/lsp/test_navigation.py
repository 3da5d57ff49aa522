"""Diagnostics, go-to-definition and find-references through `loom lsp`, across a model's files."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from loom.lsp.convert import DIAGNOSTICS_DOCS
from tests.lsp.conftest import Editor

ROOT = Path(__file__).resolve().parents[2]


async def test_a_clean_model_publishes_no_diagnostics(editor: Editor) -> None:
    editor.open("orders.loom")
    assert await editor.diagnostics("orders.loom") == []
    assert await editor.diagnostics("billing.loom") == []


async def test_an_edit_reports_the_error_with_its_code_and_docs_link(editor: Editor) -> None:
    text = (editor.folder / "orders.loom").read_text()
    editor.open("orders.loom")
    await editor.diagnostics("orders.loom")
    editor.change("orders.loom", text.replace("total: total }", "total: totl }"), 2)
    found = await editor.diagnostics("orders.loom", check=bool)
    (d,) = found
    assert d.code == "loom.unknown-name"
    assert d.severity == lsp.DiagnosticSeverity.Error
    assert "did you mean `total`" in d.message
    assert d.code_description is not None
    page, _, anchor = d.code_description.href.partition("#")
    assert page == DIAGNOSTICS_DOCS == (ROOT / "docs" / "diagnostics.md").as_uri()
    assert f'<a id="{anchor}"></a>' in (ROOT / "docs" / "diagnostics.md").read_text()
    assert d.range.start == editor.at("orders.loom", "total: total }", offset=7)


async def test_unsaved_text_wins_over_the_disk_and_other_files_see_it(editor: Editor) -> None:
    # billing.loom uses Orders.OrderPlaced: renaming the event in the open, unsaved buffer of
    # orders.loom breaks billing.loom, whose text is the disk's
    text = (editor.folder / "orders.loom").read_text()
    editor.open("orders.loom", text.replace("event OrderPlaced", "event OrderMade"))
    found = await editor.diagnostics("billing.loom", check=bool)
    assert {d.code for d in found} == {"loom.unknown-type"}


async def test_secondary_spans_are_related_information(editor: Editor) -> None:
    text = (editor.folder / "orders.loom").read_text()
    editor.open(
        "orders.loom",
        text.replace(
            "emit OrderPlaced { order: id, total: total }", "emit OrderPlaced { order: id }"
        ),
    )
    (d,) = await editor.diagnostics("orders.loom", check=bool)
    assert d.code == "loom.emit-fields"
    assert d.related_information is not None
    (related,) = d.related_information
    assert related.location.uri == editor.uri("orders.loom")
    assert related.message == "event declared here"


async def test_definition_across_files(editor: Editor) -> None:
    editor.open("billing.loom")
    got = await editor.client.text_document_definition_async(
        lsp.DefinitionParams(
            editor.doc("billing.loom"), editor.at("billing.loom", "OrderPlaced", offset=2)
        )
    )
    assert isinstance(got, list)
    (loc,) = got
    assert loc.uri == editor.uri("orders.loom")
    assert loc.range.start == editor.at("orders.loom", "event OrderPlaced", offset=6)


async def test_definition_of_fields_enum_members_and_operations(editor: Editor) -> None:
    editor.open("orders.loom")
    cases = [
        (
            editor.at("orders.loom", "total: total", offset=8),
            editor.at("orders.loom", "total: int"),
        ),
        (editor.at("orders.loom", "Placed", 1), editor.at("orders.loom", "Placed")),
        (
            editor.at("orders.loom", "OrderStatus.Cancelled", offset=12),
            editor.at("orders.loom", "Cancelled"),
        ),
        (
            editor.at("orders.loom", "order: id", offset=1),
            editor.at("orders.loom", "order: Order id"),
        ),
    ]
    for at, target in cases:
        got = await editor.client.text_document_definition_async(
            lsp.DefinitionParams(editor.doc("orders.loom"), at)
        )
        assert isinstance(got, list)
        assert [loc.range.start for loc in got] == [target], at


async def test_references_of_an_event_across_files(editor: Editor) -> None:
    editor.open("orders.loom")
    got = await editor.client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=editor.doc("orders.loom"),
            position=editor.at("orders.loom", "event OrderPlaced", offset=6),
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    assert got is not None
    where = sorted((loc.uri.rsplit("/", 1)[1], loc.range.start.line) for loc in got)
    assert where == [
        ("billing.loom", 9),  # create(e: Orders.OrderPlaced)
        ("orders.loom", 12),  # emit OrderPlaced
        ("orders.loom", 23),  # the declaration
        ("orders.loom", 25),  # channel Sales { carries: OrderPlaced }
    ]


async def test_references_of_a_context_include_the_deployable(editor: Editor) -> None:
    editor.open("orders.loom")
    got = await editor.client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=editor.doc("orders.loom"),
            position=editor.at("orders.loom", "Orders {"),
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    assert got is not None
    files = sorted(loc.uri.rsplit("/", 1)[1] for loc in got)
    assert files == ["billing.loom", "billing.loom", "deployables.loom"]


async def test_an_incremental_edit_is_applied_to_the_open_text(editor: Editor) -> None:
    editor.open("orders.loom")
    await editor.diagnostics("orders.loom")
    start = editor.at("orders.loom", "total: total }", offset=7)
    end = lsp.Position(start.line, start.character + len("total"))
    editor.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(
                uri=editor.uri("orders.loom"), version=2
            ),
            content_changes=[
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(start=start, end=end), text="sum"
                )
            ],
        )
    )
    (d,) = await editor.diagnostics("orders.loom", check=bool)
    assert d.message.startswith("unknown name `sum`")


def _utf16(text: str, needle: str) -> lsp.Position:
    """Where `needle` starts, in UTF-16 code units (the protocol's default)."""
    i = text.index(needle)
    line_start = text.rfind("\n", 0, i) + 1
    units = len(text[line_start:i].encode("utf-16-le")) // 2
    return lsp.Position(line=text.count("\n", 0, i), character=units)


async def test_columns_are_the_client_s_after_a_character_outside_ascii(editor: Editor) -> None:
    # the emoji is one character to the compiler and two UTF-16 units to the client
    text = (
        (editor.folder / "orders.loom")
        .read_text()
        .replace(
            "      status := OrderStatus.Cancelled",
            '      precondition customer != "🙂" status := OrderStatus.Canceled',
        )
    )
    editor.open("orders.loom", text)
    (d,) = await editor.diagnostics("orders.loom", check=bool)
    assert d.code == "loom.unknown-enum-member"
    assert d.range.start == _utf16(text, "Canceled")
    fixed = text.replace("Canceled", "Cancelled")
    editor.change("orders.loom", fixed, 2)
    assert await editor.diagnostics("orders.loom", check=lambda ds: not ds) == []
    got = await editor.client.text_document_definition_async(
        lsp.DefinitionParams(
            text_document=editor.doc("orders.loom"), position=_utf16(fixed, "Cancelled\n")
        )
    )
    assert isinstance(got, list)
    assert [loc.range.start for loc in got] == [_utf16(fixed, "Cancelled terminal")]
    refs = await editor.client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=editor.doc("orders.loom"),
            position=_utf16(fixed, "Cancelled terminal"),
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    assert refs is not None
    assert [loc.range.start for loc in refs] == [_utf16(fixed, "Cancelled\n")]
