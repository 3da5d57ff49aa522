"""Model migrations (docs/migrations.md): the schema of a model as a snapshot (`snapshot`), the
diff of two snapshots into steps (`diff`, `steps`), their lint (`lint`), their Alembic revision
script (`script`), the migrations folder (`folder`), applying them and reading a database's
state (`database`) and what `loom run` checks before serving (`serve`); the `loom migrate`
commands are `loom.cli.migrate`.

The tool side of Loom: it may import loom.lang, loom.model, loom.build, loom.serving and
loom.runtime, never the command line (`loom.cli`); the runtime never imports it (a service checks its own schema with `loom.runtime.storage.schema_check`).
Nothing is re-exported here, so that `loom run` loads only the modules it uses (the compiler
front end, which the lint's diagnostics come from, only when it plans a change)."""
