"""The values every layer uses: types, times, decimals, ints, the clock, ids, errors and
problem types, the domain base classes, logs, the principal. Imports no other layer.

Internal: generated code imports `loom.runtime` and its public modules."""
