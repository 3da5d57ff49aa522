"""Member names Loom reserves: the generated service stores and answers them itself, so a model may
not declare its own. The front end refuses them (`loom.reserved-member-name`); the back ends write
them under exactly these names."""

VERSION = (
    "version"  # every aggregate row and workflow instance row: its optimistic-concurrency version
)
ENDED = "ended"  # a process workflow's instance: whether `complete` ended it
TIMEOUTS = "timeouts"  # a process workflow's instance: its pending timeouts, as answered over HTTP
