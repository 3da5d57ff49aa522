"""Storage: the engine, units of work, repositories and their mapping, criteria, database
errors, leased rows. Imports values only.

Internal: generated code imports `loom.runtime` and its public modules."""
