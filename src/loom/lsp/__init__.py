"""`loom lsp`: the language server. `server.py` holds the protocol's handlers; what they answer
comes from the compiler's passes, read through the symbol index (`index.py`) of each model
(`models.py`): hover (`hover.py`), completion (`completion.py`), symbols and rename
(`symbols.py`), code actions (`actions.py`), in characters, which `positions.py` converts to and
from the client's units at the edge. Only the command line imports it."""
