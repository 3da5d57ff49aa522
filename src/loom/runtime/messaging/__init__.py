"""Messaging: events and the in-process bus, channels, the outbox and inbox, per-key order,
the relay, brokers, consumers and the transports. Imports storage and values.

Internal: generated code imports `loom.runtime` and its public modules."""
