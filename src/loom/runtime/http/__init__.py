"""HTTP: the edge, problems, authentication and tenants, idempotency keys, admin routes and
calls to other services' APIs. Imports processes, messaging, storage and values.

Internal: generated code imports `loom.runtime` and its public modules."""
