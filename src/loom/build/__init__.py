"""From a model to a generated service package on disk, and back: the model's files
(`sources`), writing and importing a package (`package`), and `loom run`'s content-addressed
builds (`cache`). Library code: `loom build`, `loom run`, `loom migrate` and the test kit use it;
it imports nothing of the command line."""
