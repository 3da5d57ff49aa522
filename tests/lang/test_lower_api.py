"""Lowering of `resource { kind: api }` and of the calls through it (loom.model.ir: Resource, ApiCall, CallApi)."""

from __future__ import annotations

from loom.lang import compile_sources, render_text
from loom.model import ir
from loom.model.ir import resources

MODEL = """
context Directory {
  aggregate Technician { name: string }
  repository Technicians for Technician { }
  response View { name: string }
  queryHandler Info(id: Technician id, note: string?): View {
    let t = Technicians.getById(id)
    return View { name: t.name }
  }
  commandHandler Forget(id: Technician id) { }
}
context Dispatch {
  resource directory { kind: api  context: Directory  timeout: 1500ms  retries: 0 }
  resource people { kind: api  context: Directory }
  commandHandler Assign(tech: Directory.Technician id): string {
    let v = directory.Info(id: tech)
    people.Forget(id: tech)
    return v.name
  }
}
"""


def _model() -> ir.Model:
    result = compile_sources({"m.loom": MODEL})
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model


def test_a_resource_lowers_with_its_settings_and_defaults() -> None:
    dispatch = _model().contexts[1]
    assert [(r.name, r.context, r.target, r.timeout_ms, r.retries) for r in dispatch.resources] == [
        ("directory", "Dispatch", "Directory", 1500, 0),
        (
            "people",
            "Dispatch",
            "Directory",
            resources.DEFAULT_TIMEOUT_MS,
            resources.DEFAULT_RETRIES,
        ),
    ]
    assert (resources.DEFAULT_TIMEOUT_MS, resources.DEFAULT_RETRIES) == (5000, 2)
    assert dispatch.resources[0].origin.line == 13


def test_a_call_lowers_to_its_handler_arguments_and_result_type() -> None:
    handler = _model().contexts[1].handlers[0]
    let, stmt, _ = handler.body
    assert isinstance(let, ir.Let) and isinstance(let.value, ir.ApiCall)
    call = let.value
    assert (call.resource, call.target, call.handler, call.kind) == (
        "directory",
        "Directory",
        "Info",
        "query",
    )
    assert call.type == ir.PayloadType("View", "Directory", "response")
    # every parameter in the handler's order; the optional one left out is null
    assert [name for name, _ in call.args] == ["id", "note"]
    tech, note = (value for _, value in call.args)
    assert isinstance(tech, ir.Param) and tech.name == "tech"
    assert isinstance(note, ir.Literal_) and note.value is None
    assert note.type == ir.OptionalType(ir.STRING)
    # a command as a statement of its own
    assert isinstance(stmt, ir.CallApi)
    assert (stmt.call.resource, stmt.call.handler, stmt.call.kind) == (
        "people",
        "Forget",
        "command",
    )
    assert stmt.call.type == ir.VOID
