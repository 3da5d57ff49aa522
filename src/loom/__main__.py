"""`python -m loom`: the `loom` command."""

from loom.cli.main import main

main()
