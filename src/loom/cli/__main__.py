"""`python -m loom.cli`: the `loom` command."""

from loom.cli.main import main

main()
