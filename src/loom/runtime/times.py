"""Durations, dates and datetimes: the wire form of a `duration`, its storage, and the time

The public path of `loom.runtime.values.times` (generated code imports this one)."""

from loom.runtime.values.times import *  # noqa: F403
