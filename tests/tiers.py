"""Which tier each test belongs to: the markers `slow`, `chaos`, `broker` and `subprocess`, applied
at collection from where a test lives and what it uses, so a new test lands in the right tier
without anyone remembering to mark it. `scripts/test.sh --fast` leaves all four out.

- chaos: everything under tests/chaos (and it is slow);
- broker: tests/runtime/transports, tests/runtime/broker, any test using the `nats_server` or
  `redis_server` fixture, however indirectly, and any that starts a server of its own with
  tests/brokers.py;
- subprocess: tests/cli, tests/chaos, a test whose function or fixtures call (directly or through
  their module's functions) a server starter of tests/liveserver.py, tests/chaos/servers.py or
  tests/chaos/deployables.py, and the few modules in SUBPROCESS that start a child their own way;
- slow: the tests in SLOW, measured over about 2 s on the 2-core dev machine (`pytest --durations`),
  plus whatever a test file marks itself.
"""

from __future__ import annotations

import inspect
from types import CodeType, ModuleType

import pytest

CHAOS = ("tests/chaos/",)
BROKER = ("tests/runtime/transports/", "tests/runtime/broker/")
BROKER_FIXTURES = {"nats_server", "redis_server"}
SUBPROCESS = (
    "tests/cli/",
    "tests/chaos/",
    # kill a service process at each commit
    "tests/e2e/test_outbox_atomic.py::test_a_crash_after_any_commit_of_a_body_loses_no_event",
    "tests/e2e/test_outbox_atomic.py::test_the_count_sees_the_loss_a_body_of_two_commits_can_suffer",
    "tests/e2e/test_pool_settings.py::test_loom_run_refuses_a_bad_pool_setting",
    "tests/e2e/test_startup_refusal.py",  # uvicorn on the generated app
    "tests/migrate/test_concurrent_apply.py",  # several `loom migrate` at once
    "tests/lsp/",  # `loom lsp` as the child process of a pytest-lsp client
    "tests/e2e/console/test_console_browser.py",  # Debian's chromium, driven by Playwright
    "tests/e2e/console/test_console_model_browser.py",  # idem: the Model screen
    "tests/e2e/console/test_flow_shop.py",  # `loom up` of the shop (NATS), and chromium
    "tests/e2e/console/test_screenshots.py",  # scripts/console_screenshots.py
)
# the helpers that start `loom run` or a broker server: a test calling one, directly, through a
# helper function of its module or through a fixture, is in that tier
SERVER_STARTERS = {("tests.liveserver", "running"), ("tests.liveserver", "refused_start")}
SERVER_STARTERS |= {("tests.chaos.servers", "Server"), ("tests.chaos.servers", "serving")}
SERVER_STARTERS |= {("tests.chaos.deployables", "Deployable"), ("tests.chaos.deployables", "Shop")}
BROKER_STARTERS = {("tests.brokers", "running_nats"), ("tests.brokers", "running_redis")}

# Node ids (a file, or a file::test without parameters) measured over ~2 s. An entry naming a test
# its module no longer defines fails the collection, so the list cannot rot.
SLOW: tuple[str, ...] = (
    # waits for the Model screen's poll (every 5 s) to bring a new count
    "tests/e2e/console/test_console_model_browser.py::test_a_node_shows_its_count_follows_it_and_links_to_its_rows",
    # 200 fuzz edits replayed through a running `loom lsp`, four requests after each
    "tests/lsp/test_fuzz.py::test_the_server_answers_after_every_edit",
    # two runs of 2,000 requests against PostgreSQL, counting the pool's new connections
    "tests/e2e/test_pool_settings.py::test_a_steady_load_opens_no_connection_per_request",
    # mypy --strict or ruff over generated code
    "tests/codegen/test_subsets.py::test_subset_passes_mypy_strict_and_ruff",
    "tests/codegen/test_support.py::test_support_mypy_strict",
    "tests/codegen/test_typed.py::test_generated_package_passes_mypy_strict",
    "tests/runtime/test_layout.py::test_the_runtime_and_the_testing_helpers_pass_mypy_strict",
    # `loom` commands in a child process, or several deployables on NATS
    "tests/e2e/console/test_flow_shop.py",  # `loom up` of three deployables, a browser: ~11 s
    "tests/cli/test_cli.py::test_run_serves_sqlite_beside_the_model_and_keeps_data",
    "tests/cli/test_dead_letters.py",
    "tests/cli/test_replicas.py",
    "tests/cli/test_run_contexts.py::test_run_contexts_serves_only_them_on_their_own_database",
    "tests/cli/test_run_observability.py",
    "tests/cli/test_timers.py::test_list_and_fire",
    "tests/cli/test_up.py",
    # `loom init`, then `loom check` and pytest on the project; pip building a wheel
    "tests/cli/test_init.py::test_the_project_checks_clean_and_its_test_passes_as_written",
    "tests/cli/test_init.py::test_a_wheel_carries_the_examples_and_init_copies_them_from_it",
    "tests/cli/test_init.py::test_the_examples_python_passes_mypy_strict",
    # `loom run --reload`: a start and one or two rebuilds and restarts
    "tests/cli/test_run_reload.py::test_an_edit_is_served_with_the_data_kept_and_an_error_keeps_the_previous_service",
    "tests/cli/test_run_reload.py::test_no_request_fails_while_the_service_is_replaced",
    "tests/cli/test_run_reload.py::test_a_model_with_errors_at_the_start_is_served_once_fixed",
    "tests/cli/test_run_reload.py::test_a_service_that_died_is_said_and_started_again_on_the_next_change",
    "tests/cli/test_run_reload.py::test_an_edit_of_the_extern_module_is_served",
    "tests/cli/test_up_traces.py",
    "tests/e2e/test_shop_deployables.py",
    "tests/e2e/test_traces_deployables.py",  # the shop's three deployables exporting OTLP
    # openapi-python-client and openapi-typescript (and tsc) on every example's document
    "tests/e2e/test_generated_clients.py",
    # two `loom run` (or a `loom up`) of tenanted deployables calling each other
    "tests/runtime/api_calls/test_tenanted.py::test_across_deployables_the_call_carries_the_tenant",
    "tests/runtime/api_calls/test_tenanted.py::"
    "test_across_deployables_without_a_shared_secret_the_reaction_is_dead_lettered",
    "tests/runtime/api_calls/test_tenanted.py::test_loom_up_gives_its_deployables_one_secret",
    "tests/migrate/test_cli.py",
    "tests/migrate/test_concurrent_apply.py",
    "tests/migrate/test_deployables.py",
    "tests/migrate/test_leftovers_deployables.py",
    "tests/migrate/test_enum_members.py",
    "tests/migrate/test_baseline_advice.py",
    "tests/migrate/test_replicas_apply.py",
    "tests/migrate/test_rolling.py",
    "tests/migrate/test_run.py::test_a_failed_sqlite_connect_leaves_no_thread_to_print_after_the_error",
    "tests/migrate/test_run.py::test_a_fresh_database_gets_every_migration",
    "tests/migrate/test_run.py::test_a_model_change_no_migration_holds_is_refused",
    "tests/migrate/test_run.py::test_behind_its_migrations_is_refused_then_migrated",
    "tests/migrate/test_run.py::test_without_migrations_additive_changes_need_migrate",
    "tests/migrate/test_run.py::test_without_migrations_migrate_refuses_what_is_not_additive",
    "tests/runtime/test_process_scheduler.py::test_the_cli_lists_and_redrives_dead_timeouts",
    "tests/scripts/test_lint.py::test_lint_names_each_failed_step",
    "tests/testing/test_kit_dependencies.py::test_the_kit_runs_without_the_test_extra",
    "tests/runtime/broker/test_log_replay.py",
    "tests/runtime/broker/test_tenants.py",
    "tests/runtime/broker/test_topology.py::test_a_broker_unreachable_at_start_is_retried_not_refused",
    "tests/runtime/transports/test_conformance.py::test_a_broker_restart_keeps_acked_and_unacked_state",
    # many rows, many builds, a fresh interpreter, or a wait that is the point of the test
    "tests/e2e/test_database_outage.py::test_a_postgres_restart_is_503_unavailable_and_the_service_recovers",
    "tests/runtime/api_calls/test_across_deployables.py::test_a_callee_that_hangs_is_a_504_within_the_timeout",
    "tests/test_brokers_smoke.py::test_a_missing_server_fails_a_run_that_requires_brokers",
    "tests/migrate/test_tenanted_keyed.py::test_loom_timers_and_episodes_from_before_tenants",
    "tests/property/test_accepted_runs.py::test_accepted_mutant_builds_imports_and_starts",
    "tests/runtime/test_events_relay_pg.py::test_two_relays_apply_1000_events_exactly_once",
    "tests/runtime/test_workflow_runtime.py::test_load_externs",
    # the VS Code extension: its .vsix built with vsce, and every model text tokenised in Node
    "tests/editors/test_vscode.py::test_the_vsix_holds_the_extension_and_its_client",
    "tests/editors/test_vscode.py::test_the_unpacked_client_loads_its_packages",
    "tests/editors/test_grammar.py::test_every_model_text_is_scoped_as_loom_reads_it",
    "tests/editors/test_grammar.py::test_golden_scopes",
    "tests/editors/test_grammar.py::test_loom_fences_of_markdown_are_scoped_as_loom_files",
)


Starters = set[tuple[str, str]]


def _calls(code: CodeType, module: ModuleType, starters: Starters, seen: set[str]) -> bool:
    """The code names one of `starters`, itself or through its module's functions."""
    for name in code.co_names:
        value = getattr(module, name, None)
        if (getattr(value, "__module__", None), getattr(value, "__name__", None)) in starters:
            return True
        inner = getattr(value, "__code__", None)
        if name not in seen and inner is not None and value.__module__ == module.__name__:
            seen.add(name)
            if _calls(inner, module, starters, seen):
                return True
    nested = (c for c in code.co_consts if isinstance(c, CodeType))  # closures, comprehensions
    return any(_calls(c, module, starters, seen) for c in nested)


def _uses(item: pytest.Item, starters: Starters) -> bool:
    """The test function or one of its fixtures calls one of `starters`."""
    functions: list[object] = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        functions += [d.func for d in defs]
    return any(
        _calls(f.__code__, module, starters, set())
        for f in functions
        if hasattr(f, "__code__") and (module := inspect.getmodule(f)) is not None
    )


def _path(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _listed(item: pytest.Item, entries: tuple[str, ...]) -> bool:
    """`entries` holds the item's folder (ending in /), file, or file::test."""
    path = _path(item)
    return path.startswith(tuple(e for e in entries if e.endswith("/"))) or bool(
        {path, item.nodeid.split("[", 1)[0]} & set(entries)
    )


def apply_tiers(items: list[pytest.Item]) -> None:
    modules = {_path(item): getattr(item, "module", None) for item in items}
    stale = [
        entry
        for entry in SLOW + SUBPROCESS
        if "::" in entry
        and entry.split("::")[0] in modules
        and not hasattr(modules[entry.split("::")[0]], entry.split("::")[1])
    ]
    if stale:
        raise pytest.UsageError(f"tests/tiers.py names tests that do not exist: {stale}")
    for item in items:
        if _listed(item, CHAOS):
            item.add_marker(pytest.mark.chaos)
            item.add_marker(pytest.mark.slow)
        fixtures = set(getattr(item, "fixturenames", ()))
        if _listed(item, BROKER) or BROKER_FIXTURES & fixtures or _uses(item, BROKER_STARTERS):
            item.add_marker(pytest.mark.broker)
        if _listed(item, SUBPROCESS) or _uses(item, SERVER_STARTERS):
            item.add_marker(pytest.mark.subprocess)
        if _listed(item, SLOW):
            item.add_marker(pytest.mark.slow)
