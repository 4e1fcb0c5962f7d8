"""A JSON document valid against a JSON Schema, built from the schema alone: what ``offline/scripted``
answers with a ``json_schema`` responseFormat, so users build against structured answers with no provider.

Deterministic (the same schema and request give the same document, byte for byte) and best effort: it
knows ``type``, ``enum``, ``const``, ``properties`` with ``required`` (every listed property is filled in,
optional ones too, so the document shows the whole shape), ``additionalProperties``, ``minProperties``,
arrays (``items``, ``prefixItems``, ``minItems``/``maxItems``, ``uniqueItems``, ``contains``), nested objects,
local ``$ref``, ``allOf`` (merged), ``anyOf``/``oneOf`` (the first option whose document the whole schema
accepts), numbers within ``minimum``/``maximum`` (exclusive too) and ``multipleOf``, strings within
``minLength``/``maxLength``, a ``pattern`` made of literals, classes, groups, alternatives and repeats, and
the formats ``date-time``, ``date``, ``time``, ``email``, ``uri``, ``uuid``, ``hostname``, ``ipv4``, ``ipv6``.
Free-form strings quote the request (``text``), or say ``example``.

What it cannot satisfy (``not``, ``if``/``then``, a contradiction, a pattern with look-arounds) it does not
guess around: the document it makes is checked like any model's answer, and fails the run ``OUTPUT_INVALID``
with the reason, as a real model's would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from jsonschema import validators

from threadline.agent.pattern_strings import matches
from threadline.agent.response_format import FORMATS

Schema = Mapping[str, Any] | bool

_MAX_DEPTH = 24  # a recursive $ref stops here (with null): past it, only what is required is filled in
_OPTIONAL_DEPTH = 4  # optional properties and array items are filled in above this depth only
_FREE_TEXT_CHARS = 200
_FORMATS: dict[str, str] = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "uri": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
}
_KEYWORD_TYPES = (
    ("object", ("properties", "required", "additionalProperties", "minProperties", "patternProperties")),
    ("array", ("items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems")),
    ("string", ("minLength", "maxLength", "pattern", "format")),
    ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)


def instance_of(schema: Schema, text: str = "") -> Any:
    """A document for ``schema`` (valid unless the schema asks for more than this module knows)."""
    return _Builder(schema, text).build(schema, 0, 0)


class _Builder:
    def __init__(self, root: Schema, text: str) -> None:
        self._root = root
        self._free = " ".join(text.split())[:_FREE_TEXT_CHARS] or "example"
        self._checker = validators.validator_for(root if isinstance(root, Mapping) else {})

    def accepts(self, schema: Schema, value: Any) -> bool:
        """Whether ``schema`` (resolved against the root document) accepts ``value``."""
        if isinstance(schema, bool):
            return schema
        with_root = {**schema}
        if isinstance(self._root, Mapping):
            for key in ("$defs", "definitions"):
                if key in self._root and key not in with_root:
                    with_root[key] = self._root[key]
        try:
            return bool(self._checker(with_root, format_checker=FORMATS).is_valid(value))
        except Exception:  # an unresolvable reference: the answer's check will say so
            return False

    def build(self, schema: Schema, depth: int, variant: int) -> Any:
        if isinstance(schema, bool) or depth > _MAX_DEPTH:
            return None
        schema = self._flatten(schema)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return self._choose(schema, schema["enum"], variant)
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                rest = {k: v for k, v in schema.items() if k != key}
                tried = [
                    self.build(_merge(rest, option), depth + 1, variant)
                    for option in schema[key]
                    if isinstance(option, Mapping)
                ]
                return next(
                    (value for value in tried if self.accepts(schema, value)), tried[0] if tried else None
                )
        kind = _kind(schema)
        if kind == "object":
            return self._object(schema, depth, variant)
        if kind == "array":
            return self._array(schema, depth, variant)
        if kind == "string":
            return self._string(schema, variant)
        if kind in ("integer", "number"):
            return _number(schema, kind == "integer", variant)
        if kind == "boolean":
            return variant % 2 == 1
        return None

    def _flatten(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """The schema with its local ``$ref`` and ``allOf`` folded in, so one pass sees every constraint."""
        for _ in range(_MAX_DEPTH):
            ref = schema.get("$ref")
            if isinstance(ref, str):
                target = _resolve(self._root, ref)
                schema = _merge({k: v for k, v in schema.items() if k != "$ref"}, target)
                continue
            parts = schema.get("allOf")
            if isinstance(parts, list):
                merged: Mapping[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
                for part in parts:
                    merged = _merge(merged, part if isinstance(part, Mapping) else {})
                schema = merged
                continue
            break
        return schema

    def _choose(self, schema: Mapping[str, Any], values: list[Any], variant: int) -> Any:
        """The first value of ``values`` (counting from ``variant``) the schema accepts."""
        ordered = values[variant % len(values) :] + values[: variant % len(values)]
        return next((value for value in ordered if self.accepts(schema, value)), ordered[0])

    def _object(self, schema: Mapping[str, Any], depth: int, variant: int) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = [name for name in schema.get("required") or () if isinstance(name, str)]
        extra = schema.get("additionalProperties", True)
        names = list(dict.fromkeys(required))
        limit = schema.get("maxProperties")
        if depth < _OPTIONAL_DEPTH:
            for name in properties:
                if limit is not None and len(names) >= limit:
                    break
                names = list(dict.fromkeys([*names, name]))
        for name, needed in (schema.get("dependentRequired") or {}).items():
            if name in names:
                names += [n for n in needed if n not in names]
        document = {}
        for name in names:
            sub = properties.get(name, extra if isinstance(extra, Mapping) else True)
            document[name] = self.build(sub, depth + 1, variant)
        index = 1
        while len(document) < (schema.get("minProperties") or 0) and extra is not False:
            while f"property{index}" in document:
                index += 1
            document[f"property{index}"] = self.build(extra, depth + 1, variant)
        return document

    def _array(self, schema: Mapping[str, Any], depth: int, variant: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        items = schema.get("items", True)
        if isinstance(items, list):  # drafts before 2020-12 spell prefixItems this way
            prefix, items = items, schema.get("additionalItems", True)
        prefix = prefix if isinstance(prefix, list) else []
        low = schema.get("minItems") or 0
        high = schema.get("maxItems")
        wanted = max(low, len(prefix) if depth < _OPTIONAL_DEPTH else 0, 1 if depth < _OPTIONAL_DEPTH else 0)
        count = min(wanted, high) if high is not None else wanted
        if items is False:
            count = min(count, len(prefix))
        contains = schema.get("contains")
        needed = (schema.get("minContains", 1) if contains is not None else 0) or 0
        document = []
        for index in range(count):
            sub: Schema = prefix[index] if index < len(prefix) else items
            if index < needed and isinstance(contains, Mapping):
                sub = _merge(sub if isinstance(sub, Mapping) else {}, contains)
            # Items differ by their position, so ``uniqueItems`` holds wherever the item schema allows.
            document.append(
                self.build(sub, depth + 1, variant + index if schema.get("uniqueItems") else variant)
            )
        return document

    def _string(self, schema: Mapping[str, Any], variant: int) -> str:
        low = schema.get("minLength") or 0
        high = schema.get("maxLength")
        known = _FORMATS.get(schema.get("format", ""))
        if known is not None:
            return _vary(known, variant, schema.get("format", ""))
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            candidates = list(matches(pattern, low, variant))
            valid = (value for value in candidates if self.accepts(schema, value))
            return next(valid, candidates[0] if candidates else "")
        suffix = "" if variant == 0 else f" {variant + 1}"  # items of an array that must differ
        value = self._free[: max(high - len(suffix), 0)] if high is not None else self._free
        value += suffix
        return value + "x" * max(low - len(value), 0)


def _kind(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        options = [k for k in kind if k != "null"] or kind
        return str(options[0]) if options else None
    if isinstance(kind, str):
        return kind
    for name, keywords in _KEYWORD_TYPES:
        if any(k in schema for k in keywords):
            return name
    return None


def _merge(first: Schema, second: Schema) -> Mapping[str, Any]:
    """Both schemas' constraints in one (as ``allOf`` asks): properties and required united, types crossed,
    bounds the tighter; a property both define gets both schemas (as ``allOf``)."""
    a = dict(first) if isinstance(first, Mapping) else {}
    b = second if isinstance(second, Mapping) else {}
    for key, value in b.items():
        if key not in a:
            a[key] = value
        elif key == "properties":
            joined = dict(a[key])
            for name, sub in value.items():
                joined[name] = {"allOf": [joined[name], sub]} if name in joined else sub
            a[key] = joined
        elif key == "required":
            a[key] = list(dict.fromkeys([*a[key], *value]))
        elif key == "type":
            left = a[key] if isinstance(a[key], list) else [a[key]]
            right = value if isinstance(value, list) else [value]
            both = [t for t in left if t in right or (t == "integer" and "number" in right)]
            both += [t for t in right if t == "integer" and "number" in left and t not in both]
            a[key] = both or left
        elif key in ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"):
            a[key] = max(a[key], value) if _numeric(a[key], value) else value
        elif key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"):
            a[key] = min(a[key], value) if _numeric(a[key], value) else value
        elif key in ("allOf", "anyOf", "oneOf"):
            a["allOf"] = [*a.get("allOf", []), {key: value}] if key != "allOf" else [*a[key], *value]
        else:
            a[key] = value
    return a


def _numeric(*values: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _resolve(root: Schema, ref: str) -> Schema:
    """A local reference (``#``, ``#/$defs/x``); anything else resolves to an empty schema (any value)."""
    if not ref.startswith("#"):
        return {}
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return {}
    return node if isinstance(node, Mapping | bool) else {}


def _number(schema: Mapping[str, Any], integer: bool, variant: int) -> int | float:
    """The allowed value nearest 0: 0 and up, or the lower bound and up when it is above 0, or the upper
    bound and down when it is below 0; ``variant`` values on."""
    low = _bound(schema, "minimum", "exclusiveMinimum", lower=True)
    high = _bound(schema, "maximum", "exclusiveMaximum", lower=False)
    step = schema.get("multipleOf") if _numeric(schema.get("multipleOf")) else None
    unit = Fraction(str(step)) if step else Fraction(1)
    start = Fraction(0)
    downward = False
    if low is not None and (start < low[0] or (start == low[0] and low[1])):
        start = low[0]
    elif high is not None and (start > high[0] or (start == high[0] and high[1])):
        start, downward = high[0], True
    if step or integer:
        start = (math.floor(start / unit) if downward else math.ceil(start / unit)) * unit
    found = []
    for offset in range(130):
        value = start - offset * unit if downward else start + offset * unit
        if _outside(value, low, high):
            if (value >= high[0]) if downward and high is not None else (low is not None and value <= low[0]):
                continue  # not in the range yet
            break
        number = int(value) if integer or (value.denominator == 1 and step is None) else float(value)
        if _multiple(number, step):
            found.append(number)
            if len(found) > variant:
                return number
    if found:
        return found[-1]
    if low is not None and high is not None and not integer and step is None:  # a narrow interval
        return float((low[0] + high[0]) / 2)
    return int(start) if integer else float(start)


def _outside(value: Fraction, low: tuple[Fraction, bool] | None, high: tuple[Fraction, bool] | None) -> bool:
    if low is not None and (value < low[0] or (value == low[0] and low[1])):
        return True
    return high is not None and (value > high[0] or (value == high[0] and high[1]))


def _bound(
    schema: Mapping[str, Any], inclusive: str, exclusive: str, *, lower: bool
) -> tuple[Fraction, bool] | None:
    """(the tightest bound, whether it is exclusive): draft 6+ numbers and draft 4's boolean flags alike."""
    found: list[tuple[Fraction, bool]] = []
    value = schema.get(inclusive)
    flag = schema.get(exclusive)
    if _numeric(value):
        found.append((Fraction(str(value)), flag is True))
    if _numeric(flag):
        found.append((Fraction(str(flag)), True))
    if not found:
        return None
    best = max(f[0] for f in found) if lower else min(f[0] for f in found)
    return best, any(exclusive for bound, exclusive in found if bound == best)


def _multiple(number: float, step: Any) -> bool:
    """``multipleOf`` as the validator checks it (a float division for floats)."""
    if not _numeric(step) or step <= 0:
        return True
    if isinstance(step, float) or isinstance(number, float):
        quotient = number / step
        return not math.isinf(quotient) and int(quotient) == quotient
    return int(number) % int(step) == 0


def _vary(value: str, variant: int, format_: str) -> str:
    """A known format's value, told apart from its siblings in an array of unique items."""
    if variant == 0:
        return value
    if format_ == "uuid":
        return f"00000000-0000-4000-8000-{variant:012d}"
    if format_ in ("email", "idn-email"):
        return f"user{variant}@example.com"
    if format_ in ("date", "date-time"):
        return value.replace("2026-01-01", f"2026-01-{min(variant + 1, 28):02d}")
    if format_ in ("uri", "iri", "uri-reference"):
        return f"https://example.com/{variant}"
    return value
