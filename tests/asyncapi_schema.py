"""Validating a payload against a message of an AsyncAPI document Loom wrote, for the tests."""

from __future__ import annotations

import uuid
from typing import Any

import jsonschema_rs


def payload_validator(doc: dict[str, Any], message: str) -> Any:
    """A validator of the payload of `message` (`Orders.OrderPlaced`) in `doc`, formats checked.
    AsyncAPI schemas are JSON Schema draft 07, which names no `uuid` format (OpenAPI's, and later
    drafts'): that one is checked here."""
    payload = doc["components"]["messages"][message]["payload"]
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", **payload}
    schema["components"] = {"schemas": doc["components"]["schemas"]}  # what its $refs name
    return jsonschema_rs.validator_for(schema, validate_formats=True, formats={"uuid": _is_uuid})


def _is_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False
