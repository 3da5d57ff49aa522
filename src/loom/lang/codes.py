"""The one registry of `loom.*` diagnostic codes.

Every code a stage may emit is declared here once, with its severity, so that severity is a property
of the rule (not of the call site) and docs/diagnostics.md can be checked against the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]

DOCS_PAGE = "docs/diagnostics.md"


@dataclass(frozen=True, slots=True)
class CodeInfo:
    code: str
    severity: Severity
    summary: str

    @property
    def anchor(self) -> str:
        return f"{DOCS_PAGE}#{self.code}"


_E: Severity = "error"
_W: Severity = "warning"

REGISTRY: dict[str, CodeInfo] = {
    c.code: c
    for c in [
        # Reading and parsing
        CodeInfo("loom.file-unreadable", _E, "a model file could not be read"),
        CodeInfo("loom.syntax-error", _E, "the text does not follow Loom's grammar"),
        CodeInfo("loom.invalid-escape", _E, "a string literal contains an unknown escape sequence"),
        CodeInfo("loom.internal-error", _E, "the compiler itself failed (a bug in Loom)"),
        CodeInfo(
            "loom.nesting-too-deep", _E, "an expression nests deeper than the compiler handles"
        ),
        # Names
        CodeInfo("loom.duplicate-declaration", _E, "a name is declared twice in the same scope"),
        CodeInfo("loom.reserved-member-name", _E, "a member uses a name Loom reserves (`version`)"),
        CodeInfo(
            "loom.generated-name-collision",
            _E,
            "two declarations would get the same route or column in the generated service",
        ),
        CodeInfo("loom.unknown-type", _E, "a type name does not resolve"),
        CodeInfo("loom.invalid-string-length", _E, "the length of `string(N)` is not 1..10485760"),
        CodeInfo("loom.unexpected-type-argument", _E, "a type other than `string` has an argument"),
        CodeInfo("loom.unknown-name", _E, "a name in an expression does not resolve"),
        CodeInfo("loom.unknown-field", _E, "a field name does not exist on the aggregate or event"),
        CodeInfo("loom.unknown-operation", _E, "an operation or method does not exist"),
        CodeInfo("loom.unknown-event", _E, "an event name does not resolve"),
        CodeInfo("loom.unknown-aggregate", _E, "an aggregate name does not resolve"),
        CodeInfo("loom.unknown-enum-member", _E, "a qualified enum member does not exist"),
        CodeInfo("loom.unknown-trait", _E, "`with` names a trait Loom does not know"),
        CodeInfo(
            "loom.duplicate-modifier",
            _E,
            "a modifier, trait or `ignoring` filter is written twice",
        ),
        CodeInfo("loom.renamed-from-itself", _E, "a declaration is renamed from its own name"),
        CodeInfo(
            "loom.duplicate-rename",
            _E,
            "two declarations of one scope are renamed from the same old name",
        ),
        CodeInfo(
            "loom.renamed-from-current-name",
            _E,
            "a declaration is renamed from a name a sibling declaration still has",
        ),
        CodeInfo("loom.ambiguous-enum-member", _E, "a bare enum member belongs to several enums"),
        CodeInfo(
            "loom.invalid-type-use",
            _E,
            "an aggregate or event is used where a value type is needed",
        ),
        # Value objects and payloads
        CodeInfo(
            "loom.record-fields",
            _E,
            "a record expression leaves out, repeats or invents a field",
        ),
        CodeInfo(
            "loom.value-object-in-query",
            _E,
            "a criterion, natural key or declared find reads a value object",
        ),
        CodeInfo(
            "loom.query-parameter-type",
            _E,
            "a queryHandler parameter the query string cannot carry",
        ),
        # Types
        CodeInfo("loom.type-mismatch", _E, "a value's type does not fit where it is used"),
        CodeInfo("loom.argument-count", _E, "a call passes the wrong number of arguments"),
        CodeInfo("loom.cannot-infer-type", _E, "the type of a value cannot be determined"),
        # Aggregates
        CodeInfo(
            "loom.assign-to-readonly", _E, "an assignment targets something that cannot change"
        ),
        CodeInfo("loom.compound-assign-type", _E, "`+=` / `-=` on a field that is not a number"),
        CodeInfo("loom.function-impure", _E, "a function calls an operation"),
        CodeInfo(
            "loom.cyclic-definition",
            _E,
            "a derived value, function or operation is defined in terms of itself",
        ),
        CodeInfo("loom.operation-in-expression", _E, "an operation call is used as a value"),
        CodeInfo("loom.invalid-statement", _E, "a statement is not allowed in this kind of body"),
        CodeInfo("loom.emit-fields", _E, "an emit leaves out, repeats or invents an event field"),
        CodeInfo(
            "loom.event-default-not-constant", _E, "the default of an event field is not a constant"
        ),
        CodeInfo("loom.unused-local", _W, "a `let` value is never read"),
        # Workflows
        CodeInfo(
            "loom.workflow-unknown-name",
            _E,
            "a workflow call receiver is not a repository or aggregate",
        ),
        CodeInfo(
            "loom.workflow-cross-context-repository",
            _E,
            "a workflow names a repository of another context",
        ),
        CodeInfo("loom.workflow-explicit-save", _E, "a workflow body saves explicitly"),
        CodeInfo(
            "loom.workflow-mutation-unsaved", _E, "a mutation the exit save would not persist"
        ),
        CodeInfo(
            "loom.autocommit-conflict",
            _E,
            "`autocommit` on a body that is transactional or a process manager's",
        ),
        CodeInfo(
            "loom.body-not-atomic",
            _W,
            "a crash can separate the saves of a body that is not transactional, or a save from"
            " the event emitted after it",
        ),
        CodeInfo("loom.workflow-create-args", _E, "the arguments of `Agg.create(...)` do not bind"),
        CodeInfo("loom.workflow-compound-assign", _E, "`+=` / `-=` in a workflow body"),
        CodeInfo("loom.workflow-foreign-assign", _E, "a workflow assigns a field of an aggregate"),
        CodeInfo("loom.workflow-find-by-id", _E, "`findById` in a workflow body"),
        CodeInfo(
            "loom.workflow-eventsourced-unapplied",
            _W,
            "an event-sourced workflow emits an event no `apply` folds",
        ),
        CodeInfo("loom.repository-filter", _E, "a repository filter is not a usable criterion"),
        CodeInfo(
            "loom.unknown-filter",
            _E,
            "`ignoring` names no filter of the read's repository",
        ),
        CodeInfo(
            "loom.workflow-use-after-delete",
            _E,
            "a body uses an aggregate after deleting it",
        ),
        CodeInfo(
            "loom.workflow-missing-repository",
            _E,
            "a workflow creates an aggregate that has no repository to save it",
        ),
        CodeInfo(
            "loom.workflow-nested-call", _E, "a load or create is not the whole value of a `let`"
        ),
        CodeInfo("loom.workflow-return-type", _E, "a workflow declares an unsupported result type"),
        CodeInfo(
            "loom.workflow-missing-return",
            _E,
            "a create with a result type does not end in `return`",
        ),
        CodeInfo("loom.workflow-unexpected-return", _E, "`return` in a create with no result type"),
        CodeInfo("loom.workflow-handle-removed", _E, "a workflow declares a `handle` member"),
        CodeInfo("loom.workflow-without-create", _W, "a workflow has no `create` entry"),
        CodeInfo(
            "loom.operation-on-id",
            _E,
            "an operation is called on an id instead of a loaded aggregate",
        ),
        CodeInfo("loom.unsupported-call", _E, "a call form Loom does not support here"),
        CodeInfo("loom.unreachable-statement", _E, "a statement follows `return`"),
        CodeInfo(
            "loom.isolation-level", _E, "`transactional(...)` names an unknown isolation level"
        ),
        # Reads, branches and loops
        CodeInfo(
            "loom.iflet-bad-source", _E, "`if let` branches on something that is not optional"
        ),
        CodeInfo(
            "loom.optional-read-outside-if-let",
            _E,
            "an optional read is used outside the source of an `if let`",
        ),
        CodeInfo("loom.notfound-outside-body", _E, "`notFound` outside a workflow or handler body"),
        CodeInfo("loom.unknown-criterion", _E, "a criterion name does not resolve"),
        CodeInfo("loom.unknown-retrieval", _E, "a retrieval name does not resolve"),
        CodeInfo("loom.unknown-key", _E, "`getBy` / `findBy` arguments are not one unique key"),
        CodeInfo("loom.find-field", _E, "a declared find's name does not map to fields"),
        CodeInfo(
            "loom.find-one-not-unique",
            _W,
            "a find answering one aggregate matches fields that hold no unique key",
        ),
        CodeInfo(
            "loom.criterion-not-translatable", _E, "a criterion uses something SQL cannot express"
        ),
        # Aggregates, continued
        CodeInfo("loom.immutable-field-assign", _E, "an operation assigns an immutable field"),
        CodeInfo("loom.private-operation-call", _E, "a private operation is called from outside"),
        CodeInfo("loom.extern-has-body", _E, "an extern operation has a body"),
        CodeInfo(
            "loom.factory-unassigned-field",
            _E,
            "a declared `create` leaves a required field unset",
        ),
        CodeInfo(
            "loom.factory-reads-aggregate",
            _E,
            "a declared `create` reads a member of the aggregate it is still creating",
        ),
        CodeInfo("loom.function-block-impure", _E, "a block-form function has a side effect"),
        CodeInfo(
            "loom.function-missing-return", _E, "a block-form function does not end in `return`"
        ),
        # Handlers, services and workflow state
        CodeInfo("loom.query-handler-mutates", _E, "a queryHandler changes something"),
        CodeInfo("loom.service-impure", _E, "a domain service method does more than it may"),
        CodeInfo(
            "loom.workflow-function-uses-state",
            _E,
            "a workflow function reads the workflow's state",
        ),
        CodeInfo(
            "loom.workflow-uncorrelated-state-write",
            _E,
            "state is assigned in a workflow with no correlation key",
        ),
        CodeInfo(
            "loom.workflow-uncorrelated-state-read",
            _E,
            "state is read in a workflow with no correlation key",
        ),
        CodeInfo(
            "loom.workflow-eventsourced-assign",
            _E,
            "`:=` outside `apply` in an event-sourced workflow",
        ),
        CodeInfo(
            "loom.apply-outside-event-sourced",
            _E,
            "`apply` in a workflow that is not event-sourced",
        ),
        CodeInfo(
            "loom.state-correlation-missing",
            _E,
            "a create of a correlated workflow cannot tell which instance it starts",
        ),
        # Reactions, channels and projections
        CodeInfo(
            "loom.trigger-parameter",
            _E,
            "an event-triggered `create` or an `on` does not take exactly one event parameter",
        ),
        CodeInfo(
            "loom.reactor-uncorrelated",
            _E,
            "a reaction's `by` does not match whether its workflow keeps instances",
        ),
        CodeInfo("loom.by-without-event", _E, "`by` on a `create` no event triggers"),
        CodeInfo("loom.by-not-event-field", _E, "`by` is not a field of the event parameter"),
        CodeInfo(
            "loom.channel-setting",
            _E,
            "a channel setting is unknown, repeated, missing or out of range",
        ),
        CodeInfo("loom.channel-overlap", _E, "an event is carried by two channels"),
        CodeInfo("loom.projection-key", _E, "a projection has no field that can key its rows"),
        # Deployables and channel sources
        CodeInfo(
            "loom.deployable-setting",
            _E,
            "a deployable setting is unknown or repeated, or it names no context",
        ),
        CodeInfo(
            "loom.unknown-context", _E, "a deployable or a resource names a context the model lacks"
        ),
        CodeInfo("loom.deployable-overlap", _E, "a context is named by two deployables"),
        CodeInfo(
            "loom.deployable-name-clash",
            _E,
            "two deployables have the same name in snake case (their folder and database)",
        ),
        # Calling another context: `resource { kind: api }`
        CodeInfo(
            "loom.resource-setting",
            _E,
            "a resource setting is unknown, repeated, missing or out of range, or binds its own context",
        ),
        CodeInfo("loom.unknown-api-handler", _E, "a call names no handler of the bound context"),
        CodeInfo("loom.api-arguments", _E, "the named arguments of an API call do not bind"),
        CodeInfo("loom.api-aggregate-result", _E, "an API call's handler answers an aggregate"),
        CodeInfo(
            "loom.api-command-in-transaction",
            _E,
            "another context's command is called inside a transactional body",
        ),
        CodeInfo(
            "loom.api-call-without-tenant",
            _W,
            "a reaction, timeout or timer of an untenanted context calls a tenanted context",
        ),
        CodeInfo(
            "loom.context-not-deployed",
            _E,
            "deployables are declared and a context is in none of them",
        ),
        CodeInfo(
            "loom.crossing-without-channel",
            _E,
            "an event consumed in another deployable than its producer's is carried by no channel",
        ),
        CodeInfo(
            "loom.channel-source-setting",
            _E,
            "a channel source's `kind` is missing or unknown, or a setting is unknown or repeated",
        ),
        CodeInfo(
            "loom.unknown-channel-source",
            _E,
            "a channel's `source` names no `channelSource`",
        ),
        # Principal and gates
        CodeInfo(
            "loom.current-user-misplaced",
            _E,
            "`currentUser` is read where the domain's rules run, or `.id` where the system runs, "
            "or a criterion reading it is not a repository filter",
        ),
        CodeInfo(
            "loom.reactor-gate-unsatisfiable",
            _W,
            "a reaction, timeout or timer calls an operation whose `requires` gate refuses the "
            "system principal",
        ),
        CodeInfo(
            "loom.filter-hides-from-system",
            _W,
            "a reaction, timeout or timer reads through a repository whose filter, reading "
            "`currentUser`, admits no row for the system principal",
        ),
        CodeInfo("loom.gate-on-reaction", _E, "a `requires` gate on an event-triggered `create`"),
        CodeInfo(
            "loom.crudish-writes-gated-field",
            _W,
            "a crudish POST or PATCH takes a field that a `when` gate guards and operations change",
        ),
        CodeInfo(
            "loom.timeout-refusal-unguarded",
            _W,
            "an `on timeout` calls an operation with a `when` gate outside any `if`",
        ),
        CodeInfo(
            "loom.read-only-field-unset",
            _E,
            "a `readOnly` field of a crudish aggregate without a factory has no default",
        ),
        # Tenants
        CodeInfo(
            "loom.tenanted-partial",
            _E,
            "a context is declared `tenanted` in one part and not in another",
        ),
        CodeInfo(
            "loom.tenant-outside-tenanted-context",
            _E,
            "`currentUser.tenant` is read in a context that is not tenanted",
        ),
        CodeInfo(
            "loom.tenant-field-reserved",
            _E,
            "an aggregate of a tenanted context has a field stored in the column `tenant`",
        ),
        CodeInfo(
            "loom.tenanted-event-untenanted-reactor",
            _E,
            "an untenanted context reacts to an event of a tenanted context",
        ),
        CodeInfo(
            "loom.tenanted-unsupported",
            _E,
            "a tenanted context reacts to an event of an untenanted context",
        ),
        CodeInfo(
            "loom.gate-admits-anonymous",
            _W,
            "a `requires` gate over `currentUser` that a caller without a token can satisfy",
        ),
        # Process managers: timeouts and completion
        CodeInfo(
            "loom.timeout-outside-process",
            _E,
            "`schedule`, `cancel`, `complete` or `on timeout` outside a correlated workflow",
        ),
        CodeInfo(
            "loom.timeout-unknown",
            _E,
            "`cancel` or `on timeout` names a timeout no body schedules",
        ),
        CodeInfo("loom.timeout-unhandled", _E, "a scheduled timeout has no `on timeout` handler"),
        CodeInfo(
            "loom.once-without-instance",
            _E,
            "`workflow X once` on a workflow that keeps no instance",
        ),
        # Migrations (`loom migrate new`'s lint of a model change: loom.migrate, docs/migrations.md)
        CodeInfo(
            "loom.migrate-drops-data",
            _W,
            "a migration drops a table or column, and the data in it (needs --allow-data-loss)",
        ),
        CodeInfo(
            "loom.migrate-narrowing-type",
            _W,
            "a column's type changes to one that may not hold every stored value "
            "(needs --allow-data-loss)",
        ),
        CodeInfo(
            "loom.migrate-tenanted-existing-table",
            _W,
            "a context becomes tenanted: its existing tables' rows have no tenant (the migration "
            "applies to empty tables only)",
        ),
        CodeInfo(
            "loom.migrate-required-without-default",
            _E,
            "a required column is added, or made required, with no constant default for the "
            "existing rows",
        ),
        CodeInfo(
            "loom.migrate-unique-duplicates",
            _E,
            "a unique key covers a column added in the same migration: existing rows all share "
            "its default",
        ),
        CodeInfo(
            "loom.migrate-unique-existing-rows",
            _W,
            "a unique key is added to a table whose existing rows may hold duplicates",
        ),
        CodeInfo(
            "loom.migrate-maybe-rename",
            _W,
            "a table or column is dropped and one of the same shape added: did you mean "
            "`renamed from`?",
        ),
        CodeInfo(
            "loom.migrate-breaks-running-code",
            _W,
            "a step the previous code cannot run against (a rolling deploy would fail meanwhile)",
        ),
        CodeInfo(
            "loom.migrate-enum-member-in-use",
            _E,
            "an enum member is removed while stored rows hold it (every read of them would fail)",
        ),
        CodeInfo(
            "loom.migrate-pending-events",
            _E,
            "a change would leave stored events (pending, dead or retained in a log) undecodable",
        ),
        CodeInfo(
            "loom.leftover-rename",
            _W,
            "a `renamed from` that the last migration already applied: no database still needs it",
        ),
        # Money and exact decimals (`decimal(P, S)`, `round(x, S, mode)`: docs/language.md)
        CodeInfo(
            "loom.invalid-decimal-precision",
            _E,
            "the precision or scale of `decimal(P, S)` is out of range",
        ),
        CodeInfo(
            "loom.decimal-scale-exceeded",
            _E,
            "a value with more digits after the point than a `decimal(P, S)` holds, unrounded",
        ),
        CodeInfo(
            "loom.unrounded-division",
            _W,
            "an unrounded `/` flows into a `decimal(P, S)`: most of its values would be refused",
        ),
        CodeInfo("loom.unknown-rounding-mode", _E, "`round`'s mode is not one of the modes"),
        CodeInfo("loom.int-out-of-range", _E, "an `int` literal beyond 64 bits"),
        CodeInfo("loom.empty-enum", _E, "an enum with no members"),
        CodeInfo(
            "loom.immutable-before-field",
            _E,
            "`immutable` written before a field's name, where it modifies the field above",
        ),
        CodeInfo("loom.invalid-round", _E, "`round(x, S, mode)` has the wrong arguments"),
        # Time
        CodeInfo(
            "loom.date-part-of-day",
            _E,
            "a date moved by a duration that is not a whole number of days",
        ),
        CodeInfo(
            "loom.bad-time-literal",
            _E,
            "`date(…)` / `datetime(…)` of something other than a valid date or UTC datetime string",
        ),
        CodeInfo(
            "loom.operation-bypasses-workflow",
            _W,
            "an operation the context's workflows call is also a public route with no gate",
        ),
        CodeInfo(
            "loom.cross-context-access",
            _E,
            "a body names an aggregate or repository of another context",
        ),
        # Flow checks, over the whole lowered model (`loom.lang.flow`)
        CodeInfo("loom.event-unconsumed", _W, "an event is emitted but nothing consumes it"),
        CodeInfo(
            "loom.event-never-emitted",
            _W,
            "a reaction takes an event that nothing emits and no channel brings in",
        ),
        CodeInfo(
            "loom.context-cycle",
            _E,
            "contexts call one another's API in a cycle (an error), or their events go round in "
            "one (a warning)",
        ),
        CodeInfo(
            "loom.reaction-loop",
            _W,
            "a reaction emits the event it reacts to again, with no gate that can stop it",
        ),
        CodeInfo(
            "loom.state-unreachable",
            _W,
            "a state of an aggregate's status enum that no operation can reach",
        ),
        CodeInfo(
            "loom.state-dead-end",
            _W,
            "a state with no way out that is not declared `terminal`",
        ),
        CodeInfo(
            "loom.process-never-completes",
            _W,
            "a process manager has no path to `complete`",
        ),
        CodeInfo(
            "loom.process-waits-unreachable",
            _W,
            "a process waits for an event that only operations whose `when` gate cannot hold emit",
        ),
    ]
}
