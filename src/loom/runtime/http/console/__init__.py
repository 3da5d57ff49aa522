"""The web console served at /_loom/ (docs/console.md): `routes.add_console` mounts it."""
