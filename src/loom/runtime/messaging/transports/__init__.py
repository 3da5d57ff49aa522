"""The broker adapters (memory, NATS JetStream, Redis Streams) behind one `Transport`.

Internal: generated code imports `loom.runtime` and its public modules."""
