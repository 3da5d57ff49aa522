"""What a served service is given, as the commands and the test kit name it: the contexts it holds
(`held`), its database (`database`), its brokers and the APIs it calls (`connections`), every
`loom run` option with its `LOOM_*` variable (`settings`) and putting them to work (`options`),
and the process helper `loom up` starts its services
through (`with_parent`). Library code: it imports nothing of the command line (`loom.cli`)."""
