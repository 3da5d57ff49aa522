"""The resolved, lowered model that back ends consume."""
