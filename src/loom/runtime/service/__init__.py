"""The composition root: `Service` wires every subsystem, handing each the narrow protocol
it needs; `create_app` serves it. The only layer that may import every other.

Internal: generated code imports `loom.runtime` and its public modules."""
