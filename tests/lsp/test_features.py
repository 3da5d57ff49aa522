"""Hover, completion, symbols, rename and quick fixes through `loom lsp`."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as lsp

from loom.lang import compile_sources
from loom.lang.format import format_source
from tests.lsp.conftest import Editor


def _text(editor: Editor, name: str) -> str:
    return (editor.folder / name).read_text()


def _apply(text: str, edits: Sequence[lsp.TextEdit]) -> str:
    """The text with the edits made (LSP's ranges are of the original text)."""
    lines = text.splitlines(keepends=True)

    def offset(p: lsp.Position) -> int:
        return sum(len(line) for line in lines[: p.line]) + p.character

    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
    return text


async def _hover(editor: Editor, name: str, at: lsp.Position) -> str:
    got = await editor.client.text_document_hover_async(
        lsp.HoverParams(text_document=editor.doc(name), position=at)
    )
    assert got is not None
    assert isinstance(got.contents, lsp.MarkupContent)
    return got.contents.value


async def test_hover_of_an_event_says_who_emits_and_consumes_it(editor: Editor) -> None:
    editor.open("billing.loom")
    shown = await _hover(editor, "billing.loom", editor.at("billing.loom", "OrderPlaced", offset=1))
    assert "event OrderPlaced" in shown
    assert "Raised once per order, when it is placed." in shown  # the comment above it
    assert "operation `Order.place`" in shown
    assert "workflow `billOrder` of `Billing` (deployable `Shop`)" in shown
    assert "channel `Sales`" in shown


async def test_hover_of_an_operation_shows_its_rules(editor: Editor) -> None:
    editor.open("orders.loom")
    shown = await _hover(editor, "orders.loom", editor.at("orders.loom", "place()"))
    assert "operation place()" in shown
    assert "Placing an order freezes its total and tells billing." in shown
    assert '`requires` `currentUser.hasRole("clerk")`' in shown
    assert "`when` `status == Open`" in shown


async def _complete(editor: Editor, name: str, text: str, at: lsp.Position) -> set[str]:
    editor.change(name, text, 2)
    got = await editor.client.text_document_completion_async(
        lsp.CompletionParams(text_document=editor.doc(name), position=at)
    )
    assert isinstance(got, lsp.CompletionList)
    return {item.label for item in got.items}


def _position(text: str, needle: str) -> lsp.Position:
    i = text.index(needle) + len(needle)
    return lsp.Position(text.count("\n", 0, i), i - (text.rfind("\n", 0, i) + 1))


async def test_completion_of_enum_members_fields_and_emits(editor: Editor) -> None:
    text = _text(editor, "orders.loom")
    editor.open("orders.loom")
    await editor.diagnostics("orders.loom")
    # an enum's members after `Enum.`, in a text that does not parse as typed
    typed = text.replace("status := OrderStatus.Cancelled", "status := OrderStatus.")
    assert await _complete(
        editor, "orders.loom", typed, _position(typed, "status := OrderStatus.")
    ) == {"Open", "Placed", "Cancelled"}
    # an event's fields not given yet inside `emit E { … }`
    typed = text.replace(
        "emit OrderPlaced { order: id, total: total }", "emit OrderPlaced { order: id, "
    )
    assert await _complete(editor, "orders.loom", typed, _position(typed, "{ order: id, ")) == {
        "total"
    }


async def test_completion_of_an_aggregate_s_fields_after_a_dot(editor: Editor) -> None:
    text = _text(editor, "orders.loom")
    editor.open("orders.loom")
    typed = text.replace(
        "  repository Orders",
        "  workflow look {\n    create(order: Order id) {\n      let o = Orders.getById(order)\n"
        "      let t = o.\n    }\n  }\n  repository Orders",
    )
    labels = await _complete(editor, "orders.loom", typed, _position(typed, "let t = o."))
    assert {"id", "customer", "total", "status", "place", "cancel"} <= labels


async def test_completion_of_another_context_s_event_fields(editor: Editor) -> None:
    text = _text(editor, "billing.loom")
    editor.open("billing.loom")
    typed = text.replace("{ order: e.order,", "{ order: e.")
    labels = await _complete(editor, "billing.loom", typed, _position(typed, "{ order: e."))
    assert labels == {"order", "total"}


async def test_workspace_symbols_of_a_folder_with_no_open_file(editor: Editor) -> None:
    found = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="Sales"))
    assert found is not None
    assert [(s.name, s.kind) for s in found] == [("Sales", lsp.SymbolKind.Interface)]


async def test_completion_of_keywords_and_names_in_place(editor: Editor) -> None:
    text = _text(editor, "orders.loom")
    editor.open("orders.loom")
    typed = text.replace("      status := Placed\n", "      status := Placed\n      \n")
    labels = await _complete(
        editor, "orders.loom", typed, _position(typed, "status := Placed\n      ")
    )
    assert {"emit", "let", "if", "precondition"} <= labels  # a body's keywords
    assert {"Order", "OrderPlaced", "Open", "total"} <= labels  # names in scope
    assert "aggregate" not in labels
    labels = await _complete(editor, "orders.loom", text, _position(text, "context Orders {\n"))
    assert {"aggregate", "enum", "event", "workflow"} <= labels


async def test_document_and_workspace_symbols(editor: Editor) -> None:
    editor.open("orders.loom")
    got = await editor.client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=editor.doc("orders.loom"))
    )
    assert got is not None
    (ctx,) = got
    assert isinstance(ctx, lsp.DocumentSymbol)
    assert ctx.name == "Orders" and ctx.kind == lsp.SymbolKind.Namespace
    assert [c.name for c in ctx.children or []] == [
        "OrderStatus", "Order", "Orders", "OrderPlaced", "Sales",
    ]  # fmt: skip
    order = next(c for c in ctx.children or [] if c.name == "Order")
    assert [c.name for c in order.children or []] == [
        "customer", "total", "status", "place", "cancel",
    ]  # fmt: skip
    found = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="invce"))
    assert found is not None
    assert [(s.name, s.container_name) for s in found] == [
        ("Invoice", "Billing"),
        ("Invoices", "Billing"),
    ]


async def _rename(editor: Editor, at: lsp.Position, new_name: str) -> lsp.WorkspaceEdit | None:
    return await editor.client.text_document_rename_async(
        lsp.RenameParams(text_document=editor.doc("orders.loom"), position=at, new_name=new_name)
    )


async def test_rename_across_files_keeps_the_event_s_data(editor: Editor) -> None:
    editor.open("orders.loom")
    got = await _rename(
        editor, editor.at("orders.loom", "event OrderPlaced", offset=8), "OrderConfirmed"
    )
    assert got is not None and got.changes is not None
    orders = _apply(_text(editor, "orders.loom"), list(got.changes[editor.uri("orders.loom")]))
    billing = _apply(_text(editor, "billing.loom"), list(got.changes[editor.uri("billing.loom")]))
    assert "event OrderConfirmed renamed from OrderPlaced {" in orders
    assert "emit OrderConfirmed {" in orders and "carries: OrderConfirmed" in orders
    assert "create(e: Orders.OrderConfirmed)" in billing
    # the edited model compiles clean
    sources = {"orders.loom": orders, "billing.loom": billing}
    sources["deployables.loom"] = _text(editor, "deployables.loom")
    assert compile_sources(sources).diagnostics == []


async def test_rename_of_a_field_adds_renamed_from_and_renames_its_uses(editor: Editor) -> None:
    editor.open("orders.loom")
    got = await _rename(editor, editor.at("orders.loom", "total: total", offset=9), "amount")
    assert got is not None and got.changes is not None
    orders = _apply(_text(editor, "orders.loom"), list(got.changes[editor.uri("orders.loom")]))
    assert "    amount: int renamed from total\n" in orders
    assert "total: amount }" in orders  # the event's field keeps its name
    sources = {"orders.loom": orders, "billing.loom": _text(editor, "billing.loom")}
    assert [d.code for d in compile_sources(sources).diagnostics] == []


async def test_rename_of_an_enum_member_keeps_the_stored_values(editor: Editor) -> None:
    editor.open("orders.loom")
    got = await _rename(editor, editor.at("orders.loom", "Placed terminal"), "Confirmed")
    assert got is not None and got.changes is not None
    orders = _apply(_text(editor, "orders.loom"), list(got.changes[editor.uri("orders.loom")]))
    assert "Confirmed terminal renamed from Placed," in orders
    assert "status := Confirmed" in orders
    sources = {"orders.loom": orders, "billing.loom": _text(editor, "billing.loom")}
    assert [d.code for d in compile_sources(sources).diagnostics] == []


async def test_a_rename_to_no_name_is_refused_with_a_message(editor: Editor) -> None:
    editor.open("orders.loom")
    got = await _rename(editor, editor.at("orders.loom", "Placed terminal"), "two words")
    assert got is None
    assert [m.message for m in editor.client.messages] == [
        "`two words` is not a Loom name: a letter or `_`, then letters, digits or `_`"
    ]


async def test_while_a_file_does_not_parse(editor: Editor) -> None:
    # navigation answers from the last text that parsed; a rename, whose edits would be of that
    # text, is refused
    text = _text(editor, "orders.loom")
    editor.open("orders.loom")
    await editor.diagnostics("orders.loom")
    editor.change("orders.loom", text.replace("status := Placed", "status := := Placed"), 2)
    (d,) = await editor.diagnostics("orders.loom", check=bool)
    assert d.code == "loom.syntax-error"
    shown = await _hover(editor, "orders.loom", editor.at("orders.loom", "total: int"))
    assert "total: int" in shown
    got = await _rename(editor, editor.at("orders.loom", "total: int"), "amount")
    assert got is None
    assert [m.message for m in editor.client.messages] == [
        "a file of the model does not parse: fix its syntax error, then rename"
    ]


async def _fixes(editor: Editor, name: str, text: str, code: str) -> list[lsp.CodeAction]:
    editor.open(name, text)
    found = await editor.diagnostics(name, check=lambda ds: any(d.code == code for d in ds))
    d = next(d for d in found if d.code == code)
    got = await editor.client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=editor.doc(name),
            range=d.range,
            context=lsp.CodeActionContext(diagnostics=[d]),
        )
    )
    assert got is not None
    return [a for a in got if isinstance(a, lsp.CodeAction)]


def _fixed(editor: Editor, name: str, text: str, action: lsp.CodeAction) -> str:
    assert action.edit is not None and action.edit.changes is not None
    return _apply(text, list(action.edit.changes[editor.uri(name)]))


async def test_quick_fix_adds_an_emit_s_missing_fields(editor: Editor) -> None:
    text = _text(editor, "orders.loom").replace("{ order: id, total: total }", "{ order: id }")
    (action,) = await _fixes(editor, "orders.loom", text, "loom.emit-fields")
    fixed = _fixed(editor, "orders.loom", text, action)
    assert "emit OrderPlaced { order: id, total: total }" in fixed
    editor.change("orders.loom", fixed, 2)
    assert await editor.diagnostics("orders.loom", check=lambda ds: not ds) == []


async def test_quick_fix_declares_an_operation_internal(editor: Editor) -> None:
    text = _text(editor, "orders.loom").replace(
        "  repository Orders",
        "  workflow drop {\n    create(order: Order id) {\n"
        "      let o = Orders.getById(order)\n      o.cancel()\n    }\n  }\n  repository Orders",
    )
    (action,) = await _fixes(editor, "orders.loom", text, "loom.operation-bypasses-workflow")
    fixed = _fixed(editor, "orders.loom", text, action)
    assert "    internal operation cancel() when" in fixed
    editor.change("orders.loom", fixed, 2)
    assert await editor.diagnostics("orders.loom", check=lambda ds: not ds) == []


async def test_quick_fix_rounds_a_division(editor: Editor) -> None:
    text = _text(editor, "billing.loom").replace(
        "    amount: int\n",
        "    amount: int\n    share: decimal(10, 2) = 0\n"
        "    operation split(n: int) {\n      share := amount / n\n    }\n",
    )
    (action,) = await _fixes(editor, "billing.loom", text, "loom.unrounded-division")
    fixed = _fixed(editor, "billing.loom", text, action)
    assert "share := round(amount / n, 2)" in fixed
    editor.change("billing.loom", fixed, 2)
    assert await editor.diagnostics("billing.loom", check=lambda ds: not ds) == []


async def test_formatting_is_loom_fmt_s_layout(editor: Editor) -> None:
    """The whole document, unsaved changes included, in the layout `loom fmt` writes; a text in
    that layout already needs no edit; a text that does not parse is left alone."""
    editor.open("orders.loom")
    original = _text(editor, "orders.loom")
    messy = original.replace("\n  ", "\n      ", 3).replace(" = ", "   =   ", 2)
    assert messy != original
    editor.change("orders.loom", messy, 2)
    asked = lsp.DocumentFormattingParams(
        text_document=editor.doc("orders.loom"),
        options=lsp.FormattingOptions(tab_size=8, insert_spaces=False),
    )
    edits = await editor.client.text_document_formatting_async(asked)
    assert edits
    formatted = _apply(messy, edits)
    assert formatted == format_source(original).text == original
    editor.change("orders.loom", formatted, 3)
    unchanged = await editor.client.text_document_formatting_async(asked)
    assert unchanged is not None and not unchanged
    editor.change("orders.loom", formatted + "\ncontext {", 4)
    assert await editor.client.text_document_formatting_async(asked) is None
