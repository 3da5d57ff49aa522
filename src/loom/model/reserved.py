"""Member names Loom reserves: the generated service stores and answers them itself, so a model may
not declare its own. The front end refuses them (`loom.reserved-member-name`); the back ends write
them under exactly these names."""

VERSION = (
    "version"  # every aggregate row and workflow instance row: its optimistic-concurrency version
)
# every aggregate: the public method generated code calls to check invariants and bounds (its
# Python name `check_invariants`, which `checkInvariants` and `check_invariants` both become)
CHECK_INVARIANTS = "check_invariants"
ENDED = "ended"  # a process workflow's instance: whether `complete` ended it
TIMEOUTS = "timeouts"  # a process workflow's instance: its pending timeouts, as answered over HTTP
# a process workflow's instance: its episode (1, 2, …: a starter after `complete` begins the next),
# and when that episode started and ended
EPISODE = "episode"
STARTED_AT = "startedAt"
ENDED_AT = "endedAt"
EPISODES = "episodes"  # the route listing an instance's episodes
