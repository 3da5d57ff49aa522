"""Loom: a domain-modelling language and its compiler to typed FastAPI + SQLAlchemy services."""

__version__ = "0.1.0"
