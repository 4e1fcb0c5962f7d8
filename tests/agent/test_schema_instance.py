"""The documents ``offline/scripted`` answers with: over schemas hypothesis generates (types, enums, consts,
objects with required and optional properties, arrays with bounds and unique items, nested objects, $ref,
allOf, anyOf, oneOf, numbers with bounds and multipleOf, strings with lengths, simple patterns and the known
formats), the document is always valid, checked as a run checks an answer, and always the same."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from threadline.agent.response_format import JsonSchemaFormat, answer_problem
from threadline.agent.schema_instance import instance_of

Schema = dict[str, Any]
NAMES = ["id", "name", "severity", "count", "when", "tags", "a", "b", "nested", "ok"]
KNOWN_FORMATS = ["date-time", "date", "time", "email", "uri", "uuid", "hostname", "ipv4", "ipv6"]
PATTERNS = [
    r"^[a-z]+$",
    r"^[A-Z]{3}-[0-9]{4}$",
    r"^(foo|bar)baz$",
    r"\d{2,4}",
    r"^[a-f0-9]{8}$",
    r"^\w+@\w+\.com$",
    r"^[^0-9]{3,}$",
    r"^(INC|REQ)-\d+$",
    r"x?y*z+",
]
SCALARS = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10)


@st.composite
def strings(draw: st.DrawFn) -> Schema:
    kind = draw(st.sampled_from(["plain", "format", "pattern"]))
    if kind == "format":
        return {"type": "string", "format": draw(st.sampled_from(KNOWN_FORMATS))}
    if kind == "pattern":
        return {"type": "string", "pattern": draw(st.sampled_from(PATTERNS))}
    schema: Schema = {"type": "string"}
    low = draw(st.integers(0, 30))
    if draw(st.booleans()):
        schema["minLength"] = low
    if draw(st.booleans()):
        schema["maxLength"] = draw(st.integers(low, 60))
    return schema


@st.composite
def numbers(draw: st.DrawFn) -> Schema:
    integer = draw(st.booleans())
    schema: Schema = {"type": "integer" if integer else "number"}
    step = draw(st.none() | (st.integers(1, 7) if integer else st.sampled_from([0.5, 0.25, 2.5, 3])))
    if step is not None:
        schema["multipleOf"] = step
    width = 2 * (step or 1) + 2
    low = draw(st.none() | st.integers(-1000, 1000))
    high = draw(st.none() | st.integers(-1000, 1000))
    if low is not None and high is not None and high < low + width:
        high = low + width
    for bound, inclusive, exclusive in (
        (low, "minimum", "exclusiveMinimum"),
        (high, "maximum", "exclusiveMaximum"),
    ):
        if bound is not None:
            schema[exclusive if draw(st.booleans()) else inclusive] = bound
    return schema


def enums() -> st.SearchStrategy[Schema]:
    values = st.lists(SCALARS, min_size=1, max_size=5, unique_by=lambda v: json.dumps(v))
    return values.map(lambda v: {"enum": v})


LEAVES = (
    strings()
    | numbers()
    | enums()
    | SCALARS.map(lambda v: {"const": v})
    | st.just({"type": "boolean"})
    | st.just({"type": "null"})
)
# One schema per type that no other type's value satisfies (integer rather than number: 1 is both).
DISTINCT = {
    "string": strings(),
    "integer": numbers().filter(lambda s: s["type"] == "integer"),
    "boolean": st.just({"type": "boolean"}),
    "null": st.just({"type": "null"}),
    "array": st.just({"type": "array", "items": {"type": "string"}}),
    "object": st.just({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}),
}


def objects(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    @st.composite
    def build(draw: st.DrawFn) -> Schema:
        properties = draw(st.dictionaries(st.sampled_from(NAMES), children, max_size=5))
        schema: Schema = {"type": "object", "properties": properties}
        schema["required"] = (
            draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
        )
        if draw(st.booleans()):
            schema["additionalProperties"] = False
        if draw(st.booleans()) and len(properties) >= 2:  # the same object, split across allOf
            names = sorted(properties)
            half = len(names) // 2
            parts = [
                {
                    "properties": {n: properties[n] for n in part},
                    "required": [n for n in schema["required"] if n in part],
                }
                for part in (names[:half], names[half:])
            ]
            return {"type": "object", "allOf": parts}
        return schema

    return build()


def arrays(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    @st.composite
    def build(draw: st.DrawFn) -> Schema:
        unique = draw(st.booleans())
        items = draw(
            st.sampled_from([{"type": "string"}, {"type": "integer", "minimum": 0}]) if unique else children
        )
        low = draw(st.integers(0, 4))
        schema: Schema = {"type": "array", "items": items, "minItems": low}
        if draw(st.booleans()):
            schema["maxItems"] = draw(st.integers(low, 6))
        if unique:
            schema["uniqueItems"] = True
        return schema

    return build()


@st.composite
def one_ofs(draw: st.DrawFn) -> Schema:
    kinds = draw(st.lists(st.sampled_from(sorted(DISTINCT)), min_size=1, max_size=4, unique=True))
    return {"oneOf": [draw(DISTINCT[kind]) for kind in kinds]}


def referenced(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    """A property defined by reference. References resolve against the root, so each definition is named
    after its content: a nested one never shadows (and so never recurses into) the one enclosing it."""

    def wrap(child: Schema) -> Schema:
        name = "d" + hashlib.sha256(json.dumps(child, sort_keys=True).encode()).hexdigest()[:12]
        return {
            "$defs": {name: child},
            "type": "object",
            "properties": {"thing": {"$ref": f"#/$defs/{name}"}},
            "required": ["thing"],
        }

    return children.map(wrap)


SCHEMAS = st.recursive(
    LEAVES | one_ofs(),
    lambda children: (
        objects(children)
        | arrays(children)
        | st.lists(children, min_size=1, max_size=3).map(lambda options: {"anyOf": options})
        | referenced(children)
    ),
    max_leaves=12,
).map(lambda schema: hoisted(schema))


def hoisted(schema: Schema) -> Schema:
    """The schema with every ``$defs`` moved to its root, where the references point."""
    found: dict[str, Any] = {}

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            found.update({k: strip(v) for k, v in node.get("$defs", {}).items()})
            return {k: strip(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    root = strip(schema)
    return {**root, "$defs": found} if found else root


@settings(max_examples=400, deadline=None)
@given(SCHEMAS, st.text(max_size=60))
def test_the_document_is_valid_and_always_the_same(schema: Schema, request: str) -> None:
    Draft202012Validator.check_schema(schema)
    document = instance_of(schema, request)
    response_format = JsonSchemaFormat.model_validate({"type": "json_schema", "name": "t", "schema": schema})
    assert answer_problem(response_format, json.dumps(document)) is None, (schema, document)
    assert json.dumps(instance_of(schema, request)) == json.dumps(document)


def test_a_triage_document_quotes_the_request() -> None:
    schema = {
        "type": "object",
        "properties": {
            "severity": {"enum": ["low", "high"]},
            "component": {"type": "string", "maxLength": 10},
            "summary": {"type": "string"},
            "at": {"type": "string", "format": "date-time"},
        },
        "required": ["severity", "component", "summary"],
    }
    assert instance_of(schema, "  Payments   gateway answers 502 ") == {
        "severity": "low",
        "component": "Payments g",
        "summary": "Payments gateway answers 502",
        "at": "2026-01-01T00:00:00Z",
    }


def test_a_recursive_schema_ends() -> None:
    schema = {
        "type": "object",
        "properties": {"child": {"$ref": "#"}, "v": {"type": "integer", "minimum": 3}},
    }
    document = instance_of(schema)
    assert Draft202012Validator(schema).is_valid(document)
    assert json.dumps(document).count("child") < 10


def test_what_it_cannot_satisfy_is_answered_anyway_and_found_invalid() -> None:
    """No guessing: the run's check of the answer says why (the run then fails OUTPUT_INVALID)."""
    for schema in (
        {"type": "string", "not": {"type": "string"}},
        {"type": "integer", "minimum": 5, "maximum": 4},
        {"type": "string", "pattern": "^(?=x)y$"},
        False,
    ):
        document = instance_of(schema, "hello")
        assert not Draft202012Validator(schema).is_valid(document)
