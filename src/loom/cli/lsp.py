"""`loom lsp`: the language server, over stdin and stdout (docs/editors.md)."""

from __future__ import annotations

import click


@click.command()
def lsp() -> None:
    """Serve the Language Server Protocol over stdio, for editors (docs/editors.md).

    Diagnostics as you type, go-to-definition, references, hover, completion, outline, rename and
    quick fixes for the `.loom` files of each folder an editor opens."""
    from loom.lsp.server import serve

    serve()
