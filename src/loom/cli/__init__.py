"""The `loom` command (`loom.cli.main`): one click application whose commands are each a module of
this package, imported only when chosen. What the commands share with the test kit and the
migrations (the build pipeline, the run options, the model's files) is library code in
`loom.build` and `loom.serving`, which never import this package.

Exit codes: 0 success, 1 the model has errors, 2 the command line or the environment is wrong.
Whatever goes wrong, the user gets a sentence, never a Python traceback.
"""
