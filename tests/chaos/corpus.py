"""The bad-input corpus: for every route of a service's OpenAPI document, requests that are wrong
in every way a client can be wrong — malformed JSON, wrong types, absurd numbers, NaN, lone
surrogates, NUL bytes, a 10 MB body, 100 000 levels of nesting, injection strings in path and
query parameters, wrong content types, empty bodies.

Each case starts from a well-formed request (`sample`) and breaks one thing, so the broken thing is
what the service meets, not an earlier missing field. Values are JSON text or URL text, exactly as
sent: a number too big for a float must reach the server as those digits."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# JSON tokens put in place of one body member.
MEMBER_TOKENS: dict[str, str] = {
    "bool true": "true",
    "bool false": "false",
    'string "1"': '"1"',
    "float 1.0": "1.0",
    "exponent 1e3": "1e3",
    "huge 1e999999999": "1e999999999",
    'string "1E+1000000"': '"1E+1000000"',
    "huge 9e999999": "9e999999",
    "tiny 1e-999999": "1e-999999",
    "negative zero": "-0",
    "400-digit int": "1" + "0" * 400,
    "400-digit negative int": "-1" + "0" * 400,
    "int64 max + 1": "9223372036854775808",
    "int64 min - 1": "-9223372036854775809",
    "int32 max + 1": "2147483648",
    "minus one": "-1",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    'string "NaN"': '"NaN"',
    "lone high surrogate": '"\\ud800"',
    "lone low surrogate": '"\\udfff"',
    "surrogates reversed": '"\\udc00\\ud800"',
    "NUL in string": '"a\\u0000b"',
    "100k-char string": '"' + "x" * 100_000 + '"',
    # incompressible, unlike the one above: what a database index meets at full size
    "8k random chars": json.dumps(random.Random(9).randbytes(6144).hex()[:8192]),
    "SQL injection": json.dumps("'; DROP TABLE tickets; --"),
    "impossible date": '"2030-13-45T99:99:99Z"',
    "nil uuid": '"00000000-0000-0000-0000-000000000000"',
    "null": "null",
    "empty string": '""',
    "array": "[]",
    "object": "{}",
    "nested arrays": "[[[[[1]]]]]",
}

# The tokens every member gets; the others only where the member's type makes them interesting
# (all of them with `every_token`, as bench/chaos.py runs it).
COMMON_TOKENS = (
    "bool true",
    'string "1"',
    "null",
    "array",
    "object",
    "NaN",
    "huge 1e999999999",
    "400-digit int",
    "lone high surrogate",
    "NUL in string",
)
NUMERIC_TOKENS = (
    "bool false",
    "float 1.0",
    "exponent 1e3",
    'string "1E+1000000"',
    "huge 9e999999",
    "tiny 1e-999999",
    "negative zero",
    "400-digit negative int",
    "int64 max + 1",
    "int64 min - 1",
    "int32 max + 1",
    "minus one",
    "Infinity",
    "-Infinity",
    'string "NaN"',
)
STRING_TOKENS = (
    "lone low surrogate",
    "surrogates reversed",
    "100k-char string",
    "SQL injection",
    "impossible date",
    "nil uuid",
    "empty string",
    "nested arrays",
)

# Whole bodies, as bytes.
DEPTH = 100_000
BODIES: dict[str, bytes] = {
    "empty body": b"",
    "truncated object": b'{"a":',
    "lone brace": b"{",
    "not json": b"not json",
    "trailing comma": b'{"a": 1,}',
    "single quotes": b"{'a': 1}",
    "null document": b"null",
    "array document": b"[]",
    "string document": b'"x"',
    "number document": b"1e999999999",
    "NaN document": b"NaN",
    "invalid utf-8": b'{"a": "\xff\xfe"}',
    "utf-8 BOM": b"\xef\xbb\xbf{}",
    "raw NUL byte": b'{"a": "\x00"}',
    "deep arrays": b"[" * DEPTH + b"]" * DEPTH,
    "deep objects": b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
    "duplicate members": b'{"a": 1, "a": 2}',
}

# Path and query values, as URL text (already percent-encoded where needed).
URL_VALUES: dict[str, str] = {
    "SQL injection": "%27%20OR%20%271%27%3D%271",
    "statement injection": "1%3B%20DROP%20TABLE%20x--",
    "path traversal": "..%2F..%2Fetc%2Fpasswd",
    "NUL byte": "%00",
    "surrogate bytes": "%ED%A0%80",
    "invalid utf-8": "%FF%FE",
    "huge number": "1e999999999",
    "huge exponent": "1E%2B1000000",
    "tiny number": "1e-999999",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "minus one": "-1",
    "zero": "0",
    "400 digits": "9" * 400,
    "fraction": "1.5",
    "bool": "true",
    "5000 chars": "x" * 5000,
    "script": "%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    "lone percent": "%",
    "nil uuid": "00000000-0000-0000-0000-000000000000",
    "empty": "",
}

CONTENT_TYPES: dict[str, str | None] = {
    "text/plain": "text/plain",
    "form": "application/x-www-form-urlencoded",
    "multipart without boundary": "multipart/form-data",
    "xml": "application/xml",
    "no content type": None,
    "json in utf-16": "application/json; charset=utf-16",
}

TEN_MB = 10 * 1024 * 1024
_SLOT = "__chaos_slot__"


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # the template, e.g. /api/tickets/{id}/close
    parameters: tuple[Mapping[str, Any], ...]
    body: Mapping[str, Any] | None  # the JSON request schema, $refs resolved at the top

    @property
    def name(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Case:
    route: str
    name: str
    method: str
    url: str  # path and query, as sent
    content: bytes | None = None
    content_type: str | None = "application/json"


class Spec:
    """An OpenAPI document, and the valid-looking values its schemas call for."""

    def __init__(self, document: Mapping[str, Any], ids: Mapping[str, str]) -> None:
        self.document = document
        self.ids = ids  # collection path (/api/tickets) -> the id of a stored row

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in schema:
            node: Any = self.document
            for part in schema["$ref"].removeprefix("#/").split("/"):
                node = node[part]
            schema = node
        return schema

    def routes(self) -> list[Route]:
        found = []
        for path, operations in sorted(self.document["paths"].items()):
            for method, op in operations.items():
                content = op.get("requestBody", {}).get("content", {})
                body = content.get("application/json", {}).get("schema")
                found.append(
                    Route(
                        method.upper(),
                        path,
                        tuple(op.get("parameters", ())),
                        self.resolve(body) if body else None,
                    )
                )
        return found

    def sample(self, schema: Mapping[str, Any], name: str = "") -> Any:
        schema = self.resolve(schema)
        if "anyOf" in schema:
            options = [s for s in schema["anyOf"] if self.resolve(s).get("type") != "null"]
            return self.sample(options[0], name) if options else None
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            return {k: self.sample(v, k) for k, v in props.items()}
        if kind == "array":
            return [self.sample(schema.get("items", {}), name)]
        if kind == "integer":
            return max(1, int(schema.get("minimum", 1)))
        if kind == "number":
            return 1
        if kind == "boolean":
            return False
        fmt = schema.get("format")
        if fmt == "uuid":
            return str(uuid.uuid4())
        if fmt == "date-time":
            return "2030-01-01T00:00:00Z"
        if fmt == "date":
            return "2030-01-01"
        return f"chaos-{name or 'x'}"

    def url_value(self, route: Route, param: Mapping[str, Any]) -> str:
        """A well-formed value for a path or query parameter: the stored row's id when the
        route is under a collection that has one."""
        schema = self.resolve(param.get("schema", {}))
        if param["in"] == "path" and schema.get("format") == "uuid":
            for collection, stored in self.ids.items():
                if route.path.startswith(collection + "/"):
                    return stored
        value = self.sample(schema, param["name"])
        if isinstance(value, list):
            value = value[0]
        return str(value).lower() if isinstance(value, bool) else str(value)


def _url(route: Route, values: Mapping[str, str], spec: Spec) -> str:
    path = route.path
    query = []
    for p in route.parameters:
        value = values.get(p["name"], spec.url_value(route, p))
        if p["in"] == "path":
            path = path.replace("{" + p["name"] + "}", value)
        elif p["in"] == "query":
            query.append(f"{p['name']}={value}")
    return path + ("?" + "&".join(query) if query else "")


def _body_with(document: Any, member: str, token: str) -> bytes:
    """`document` as JSON, with `member`'s value replaced by the raw JSON `token`."""
    text = json.dumps({**document, member: _SLOT})
    return text.replace(json.dumps(_SLOT), token, 1).encode()


def tokens_for(spec: Spec, schema: Mapping[str, Any], every_token: bool) -> list[str]:
    if every_token:
        return list(MEMBER_TOKENS)
    schema = spec.resolve(schema)
    kinds = {spec.resolve(s).get("type") for s in schema.get("anyOf", [schema])}
    picked = list(COMMON_TOKENS)
    if kinds & {"integer", "number"}:
        picked += NUMERIC_TOKENS
    if "string" in kinds:
        picked += STRING_TOKENS
    return picked


def cases(spec: Spec, route: Route, *, every_token: bool = False) -> Iterator[Case]:
    base_url = _url(route, {}, spec)
    document = spec.sample(route.body) if route.body is not None else None
    valid = json.dumps(document).encode() if document is not None else None

    def case(name: str, url: str = base_url, content: bytes | None = valid, **kw: Any) -> Case:
        return Case(route.name, name, route.method, url, content, **kw)

    other = "PUT" if route.method != "PUT" else "PATCH"
    yield Case(route.name, f"method {other}", other, base_url, valid)
    for p in route.parameters:
        if p["in"] not in ("path", "query"):
            continue
        for label, value in URL_VALUES.items():
            yield case(f"{p['in']} {p['name']}: {label}", _url(route, {p["name"]: value}, spec))
        if p["in"] == "query":
            one = spec.url_value(route, p)
            yield case(f"query {p['name']}: repeated", f"{base_url}&{p['name']}={one}")
    if route.body is None:
        yield case("unexpected body", content=b'{"unexpected": 1e999999999}')
        return
    for label, raw in BODIES.items():
        yield case(label, content=raw)
    for label, content_type in CONTENT_TYPES.items():
        content = valid or b""
        if content_type and "utf-16" in content_type:
            content = content.decode().encode("utf-16")
        yield case(f"content type: {label}", content=content, content_type=content_type)
    members = list(dict(route.body).get("properties", {}))
    if isinstance(document, dict):
        yield case("unknown member", content=_body_with(document, "chaosUnknown", "1"))
        yield case("no members", content=b"{}")
        big = members[0] if members else "chaos"
        yield case("10 MB body", content=_body_with(document, big, '"' + "x" * TEN_MB + '"'))
        properties = dict(route.body).get("properties", {})
        for member in members:
            for label in tokens_for(spec, properties[member], every_token):
                content = _body_with(document, member, MEMBER_TOKENS[label])
                yield case(f"{member}: {label}", content=content)
    else:  # the body is a bare value (a list, a single payload's own type)
        yield case("10 MB body", content=b"[" + b"1," * (TEN_MB // 2) + b"1]")
        for label in tokens_for(spec, route.body, every_token):
            yield case(f"body: {label}", content=MEMBER_TOKENS[label].encode())
