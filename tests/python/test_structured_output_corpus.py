"""Structured output over a corpus: JSON schemas of the shapes programs ask
for and GBNF grammars in llama.cpp's dialect, each sampled at temperature 1
with several seeds (concurrently, so that the server batches them) through
/v1/completions and /v1/chat/completions, routes and request fields
alternating between cases. Every answer must end by the grammar ("stop", not
cut at max_tokens: every language here is bounded so that it fits) and be in
the language: a schema's answers parse with json.loads and validate with the
`jsonschema` package; a grammar's answers satisfy the grammar's own judge, a
Python regular expression or small parser written independently of the
grammar (and checked here against examples in and out of the language).
A few schema cases have a prompt that pushes the model toward a value the
schema forbids (SCHEMA_PROMPTS): the constraint, not the model, must hold.
Each case lists every seed's problem when it fails.

The corpus's sizes are asserted, so that it cannot silently shrink."""
import concurrent.futures
import copy
import json
import re

import jsonschema
import openai
import pytest
from openai import OpenAI

SEEDS = [1, 2, 3]
MAX_TOKENS = 256
SCHEMA_PROMPT = "Answer with JSON."
GRAMMAR_PROMPT = "Answer."

# ---------------------------------------------------------------------------
# JSON schemas. Every string is bounded (maxLength, enum, const, pattern or
# format), every array (maxItems or a tuple), every number (a range; an
# integer with one bound has at most 16 digits), and no $ref recurses, so
# that an answer ends well within MAX_TOKENS.

S = {"type": "string", "maxLength": 8}  # a short free string


def I(lo, hi):  # noqa: E743 - an integer in [lo, hi]
    return {"type": "integer", "minimum": lo, "maximum": hi}


def obj(properties, required=None, **more):
    """An object schema; `required` defaults to all of its properties."""
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else required, **more}


SCHEMAS = {
    # --- objects -------------------------------------------------------------
    "person_nested_address": obj({
        "name": S, "age": I(0, 120),
        "address": obj({"street": S, "city": S, "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                        "country": {"enum": ["US", "DE", "FR", "JP"]}}),
    }),
    "deeply_nested_four_levels": obj({"a": obj({"b": obj({"c": obj({"d": I(0, 9)})})})}),
    "optional_fields_none_required": obj(
        {"nickname": S, "score": I(-5, 5), "active": {"type": "boolean"}, "note": {"type": "null"}}, required=[]),
    "optional_fields_some_required": obj(
        {"id": I(1, 999), "title": S, "subtitle": S, "draft": {"type": "boolean"}}, required=["id", "title"]),
    "additional_properties_false": obj({"x": I(0, 9), "y": I(0, 9)}, additionalProperties=False),
    "empty_object": {"type": "object", "properties": {}, "additionalProperties": False},
    "min_max_properties": obj({"a": I(0, 9), "b": I(0, 9), "c": I(0, 9), "d": I(0, 9)}, required=[],
                              minProperties=2, maxProperties=3),
    "map_of_integers_property_names": {
        "type": "object", "propertyNames": {"pattern": "^[a-z]{1,5}$"},
        "additionalProperties": I(0, 99), "minProperties": 1, "maxProperties": 3,
    },
    "pattern_properties": {
        "type": "object", "patternProperties": {"^x_[a-z]{1,4}$": {"type": "boolean"}},
        "additionalProperties": False, "maxProperties": 2,
    },
    "escaped_property_names": obj({"first name": S, "na\u00efve": {"type": "boolean"},
                                   'say "hi"': I(0, 9), "back\\slash": {"type": "null"}}),
    "annotations_ignored": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Reading",
        "description": "A sensor reading", "type": "object",
        "properties": {"sensor": {"type": "string", "maxLength": 6, "description": "its name",
                                  "examples": ["t1"]},
                       "value": {"type": "integer", "minimum": 0, "maximum": 500, "default": 20,
                                 "title": "Value"}},
        "required": ["sensor", "value"],
    },
    "openai_strict_nullable": obj({
        "city": S, "temperature_c": {"type": ["integer", "null"], "minimum": -40, "maximum": 50},
        "condition": {"type": ["string", "null"], "enum": ["sunny", "rain", "snow", None]},
    }, additionalProperties=False),
    # --- arrays --------------------------------------------------------------
    "array_of_enums": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 4},
    "array_of_integer_enums": {"type": "array", "items": {"enum": [1, 2, 4, 8]}, "maxItems": 5},
    "array_fixed_size": {"type": "array", "items": I(0, 9), "minItems": 3, "maxItems": 3},
    "array_of_objects": {"type": "array", "items": obj({"sku": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{3}$"},
                                                        "qty": I(1, 20)}),
                         "minItems": 1, "maxItems": 3},
    "array_of_arrays_matrix": {"type": "array", "minItems": 2, "maxItems": 2,
                               "items": {"type": "array", "items": I(-9, 9), "minItems": 2, "maxItems": 2}},
    "array_of_strings_bounded": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 5},
                                 "minItems": 2, "maxItems": 4},
    "array_empty_allowed": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
    "array_items_any_of": {"type": "array", "maxItems": 4,
                           "items": {"anyOf": [I(0, 9), {"enum": ["low", "high"]}, {"type": "null"}]}},
    # --- $ref and $defs ----------------------------------------------------------
    "refs_defs_points": {
        "$defs": {"point": obj({"x": I(0, 9), "y": I(0, 9)})},
        "type": "object", "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}},
        "required": ["from", "to"],
    },
    "refs_definitions_draft7_style": {
        "definitions": {"money": obj({"amount": I(0, 1000), "currency": {"enum": ["EUR", "USD"]}})},
        "type": "object", "properties": {"price": {"$ref": "#/definitions/money"},
                                         "tax": {"$ref": "#/definitions/money"}},
        "required": ["price"],
    },
    "refs_chained": {
        "$defs": {"name": {"type": "string", "minLength": 1, "maxLength": 6},
                  "user": obj({"name": {"$ref": "#/$defs/name"}, "role": {"$ref": "#/$defs/role"}}),
                  "role": {"enum": ["admin", "editor", "viewer"]}},
        "type": "object", "properties": {"owner": {"$ref": "#/$defs/user"},
                                         "members": {"type": "array", "items": {"$ref": "#/$defs/user"},
                                                     "maxItems": 2}},
        "required": ["owner", "members"],
    },
    "ref_to_property_path": {
        "type": "object",
        "properties": {"shipping": obj({"line": S, "zip": {"type": "string", "pattern": "^[0-9]{4}$"}}),
                       "billing": {"$ref": "#/properties/shipping"}},
        "required": ["shipping", "billing"],
    },
    "ref_as_root": {"$defs": {"flag": obj({"on": {"type": "boolean"}, "level": I(1, 3)})}, "$ref": "#/$defs/flag"},
    "nullable_ref_any_of": {
        "$defs": {"coord": obj({"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                "lon": {"type": "number", "minimum": -180, "maximum": 180}})},
        "type": "object", "properties": {"where": {"anyOf": [{"$ref": "#/$defs/coord"}, {"type": "null"}]}},
        "required": ["where"],
    },
    # --- anyOf / oneOf / allOf -----------------------------------------------
    # allOf as llama.cpp reads it: objects merged (all properties required,
    # no others), enums intersected
    "all_of_merged_objects": {"allOf": [
        obj({"id": I(1, 99)}),
        obj({"id": I(1, 99), "tag": {"enum": ["new", "old"]}}),
    ]},
    "all_of_enums_through_refs": {"$defs": {"a": {"enum": ["x", "y", "z"]}, "b": {"enum": ["y", "z", "w"]}},
                                  "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]},
    "any_of_primitives": {"anyOf": [I(0, 99), {"type": "string", "maxLength": 5}, {"type": "boolean"}]},
    "any_of_objects": {"anyOf": [obj({"email": {"type": "string", "pattern": "^[a-z]{1,6}@[a-z]{1,6}\\.com$"}}),
                                 obj({"phone": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{4}$"}})]},
    "one_of_discriminated_union": {"oneOf": [
        obj({"kind": {"const": "circle"}, "radius": I(1, 9)}, additionalProperties=False),
        obj({"kind": {"const": "rect"}, "w": I(1, 9), "h": I(1, 9)}, additionalProperties=False),
        obj({"kind": {"const": "point"}}, additionalProperties=False),
    ]},
    "one_of_disjoint_types": {"oneOf": [I(0, 9), {"type": "string", "maxLength": 4}, {"type": "null"}]},
    # what pydantic writes for a model: titles, $defs, a single-element allOf
    # around a $ref (a field with a description), anyOf with null for Optional
    "pydantic_style_model": {
        "$defs": {"Color": {"enum": ["red", "green", "blue"], "title": "Color", "type": "string"},
                  "Pet": {"properties": {"kind": {"enum": ["cat", "dog"], "title": "Kind", "type": "string"},
                                         "age": {"maximum": 30, "minimum": 0, "title": "Age", "type": "integer"}},
                          "required": ["kind", "age"], "title": "Pet", "type": "object"}},
        "properties": {"name": {"maxLength": 8, "title": "Name", "type": "string"},
                       "favorite": {"allOf": [{"$ref": "#/$defs/Color"}], "description": "their favourite"},
                       "pets": {"items": {"$ref": "#/$defs/Pet"}, "maxItems": 2, "title": "Pets", "type": "array"},
                       "nickname": {"anyOf": [{"maxLength": 6, "type": "string"}, {"type": "null"}],
                                    "default": None, "title": "Nickname"}},
        "required": ["name", "favorite", "pets"], "title": "Owner", "type": "object",
    },
    "type_array_union": {"type": ["integer", "boolean", "null"], "minimum": 0, "maximum": 9},
    # --- const and enum ------------------------------------------------------
    "const_fields": obj({"version": {"const": 2}, "kind": {"const": "event"}, "ok": {"const": True},
                         "nothing": {"const": None}}),
    "const_object_and_array": obj({"meta": {"const": {"a": 1, "b": [True, None, "x"]}},
                                   "pair": {"const": [1, "two"]}}),
    "enum_mixed_types": obj({"v": {"enum": ["a", 1, 2.5, None, True, {"k": "v"}, [1, 2]]}}),
    "enum_strings_needing_escapes": obj({"s": {"enum": ['say "hi"', "back\\slash", "tab\there", "line\nbreak",
                                                        "caf\u00e9", "\u65e5\u672c"]}}),
    # --- strings ---------------------------------------------------------------
    "string_min_max_length": obj({"code": {"type": "string", "minLength": 3, "maxLength": 6},
                                  "one": {"type": "string", "minLength": 1, "maxLength": 1},
                                  "empty": {"type": "string", "maxLength": 0}}),
    "string_patterns": obj({
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "phone": {"type": "string", "pattern": "^\\+?[0-9]{1,3}-[0-9]{3}-[0-9]{4}$"},
        "color": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"},
        "slug": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+){0,2}$", "maxLength": 12},
    }, required=["sku", "phone", "color"]),
    "string_pattern_alternation": obj({"semver": {"type": "string",
                                                  "pattern": "^v?[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}$"},
                                       "level": {"type": "string", "pattern": "^(debug|info|warn|error)$"}}),
    "format_date": obj({"day": {"type": "string", "format": "date"}}),
    # the prompt leads the model to a day its month does not have: the format must hold
    "format_date_prompted_impossible_day": obj({"day": {"type": "string", "format": "date"}}),
    "format_time": obj({"at": {"type": "string", "format": "time"}}),
    # the prompt leads the model to a leap second where none can be (only 23:59:60 UTC)
    "format_time_prompted_leap_second": obj({"at": {"type": "string", "format": "time"}}),
    "format_date_time": obj({"when": {"type": "string", "format": "date-time"}}),
    "format_uuid": obj({"id": {"type": "string", "format": "uuid"},
                        "parent": {"type": ["string", "null"], "format": "uuid"}}),
    "formats_together_event": obj({
        "title": {"type": "string", "maxLength": 12}, "day": {"type": "string", "format": "date"},
        "start": {"type": "string", "format": "time"}, "id": {"type": "string", "format": "uuid"},
    }),
    # --- numbers -------------------------------------------------------------
    "integer_bounds": obj({"neg": I(-50, -10), "small": I(0, 5), "year": I(1900, 2100), "big": I(100000, 100099)}),
    "integer_exclusive_bounds": obj({"n": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
                                     "m": {"type": "integer", "exclusiveMinimum": -3, "maximum": 3}}),
    "integer_multiple_of": obj({"step": {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 5}}),
    "number_bounds": obj({"ratio": {"type": "number", "minimum": 0, "maximum": 1},
                          "price": {"type": "number", "minimum": 0.01, "maximum": 999.99},
                          "temp": {"type": "number", "minimum": -273.15, "maximum": 100}}),
    "number_exclusive_bounds": obj({"p": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                                    "q": {"type": "number", "minimum": 1.5, "exclusiveMaximum": 2.5}}),
    "geo_point": obj({"lat": {"type": "number", "minimum": -90, "maximum": 90},
                      "lon": {"type": "number", "minimum": -180, "maximum": 180},
                      "alt_m": {"type": "integer", "minimum": -500, "maximum": 9000}}, required=["lat", "lon"]),
    # --- booleans and nulls ----------------------------------------------------
    "booleans_only": obj({"a": {"type": "boolean"}, "b": {"type": "boolean"}, "c": {"type": "boolean"}}),
    "nulls_and_nullables": obj({"gone": {"type": "null"}, "maybe": {"type": ["boolean", "null"]},
                                "opt": {"anyOf": [I(0, 9), {"type": "null"}]}}),
    # --- top-level primitives --------------------------------------------------
    "root_integer": I(-1000, 1000),
    "root_number": {"type": "number", "minimum": -1, "maximum": 1},
    "root_boolean": {"type": "boolean"},
    "root_null": {"type": "null"},
    "root_string_enum": {"enum": ["yes", "no", "maybe"]},
    "root_bounded_string": {"type": "string", "minLength": 2, "maxLength": 10},
    # --- tuples --------------------------------------------------------------
    # llama.cpp's reading of `items` as an array: exactly those items, in order
    "tuple_llama_items_array": {"type": "array", "items": [I(0, 99), {"enum": ["x", "y"]}]},
    "tuple_llama_items_array_nested": obj({
        "row": {"type": "array", "items": [{"type": "string", "maxLength": 4}, {"type": "boolean"},
                                           obj({"n": I(0, 9)}), {"type": "null"}]},
    }),
    "tuple_prefix_items_closed": {"type": "array", "prefixItems": [{"const": "rgb"}, I(0, 255), I(0, 255), I(0, 255)],
                                  "items": False, "minItems": 4},
    "tuple_prefix_items_then_items": {"type": "array", "prefixItems": [{"enum": ["GET", "POST"]}, S],
                                      "items": I(0, 9), "minItems": 2, "maxItems": 4},
    # prefixItems alone, as llama.cpp reads it: exactly those items
    "tuple_prefix_items_alone": {"type": "array", "prefixItems": [I(0, 9), {"enum": ["a", "b"]}]},
    # no type: a known format makes a string, properties an object (llama.cpp's reading)
    "typeless_format_and_properties": {"properties": {"when": {"format": "date"}, "id": {"format": "uuid"}},
                                       "required": ["when", "id"]},
    # one bound: at most 16 digits on the open side (llama.cpp's integers)
    "integer_lower_bound_only": obj({"n": {"type": "integer", "minimum": 5}, "m": {"type": "integer",
                                                                                  "maximum": -3}}),
    # --- shapes programs ask for ------------------------------------------------
    "tool_call": obj({"name": {"enum": ["get_weather", "search", "send_email"]},
                      "arguments": obj({"query": {"type": "string", "maxLength": 12},
                                        "limit": I(1, 10)}, required=["query"])}),
    "tool_calls_by_name": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"oneOf": [
        obj({"name": {"const": "get_weather"}, "arguments": obj({"city": S, "unit": {"enum": ["C", "F"]}})}),
        obj({"name": {"const": "add"}, "arguments": obj({"a": I(-99, 99), "b": I(-99, 99)})}),
    ]}},
    "classification": obj({"label": {"enum": ["positive", "negative", "neutral"]},
                           "confidence": {"type": "number", "minimum": 0, "maximum": 1}}),
    "aspect_sentiments": {"type": "array", "minItems": 1, "maxItems": 3, "items": obj({
        "aspect": {"enum": ["price", "service", "food"]}, "score": I(1, 5)})},
    "extraction_invoice": obj({
        "invoice_no": {"type": "string", "pattern": "^INV-[0-9]{4}$"},
        "date": {"type": "string", "format": "date"},
        "lines": {"type": "array", "minItems": 1, "maxItems": 2, "items": obj({
            "desc": {"type": "string", "maxLength": 10}, "qty": I(1, 9),
            "unit_price": {"type": "number", "minimum": 0, "maximum": 100}})},
        "paid": {"type": "boolean"},
    }),
    "config_file": obj({
        "log_level": {"enum": ["debug", "info", "warning", "error"]},
        "port": I(1024, 65535),
        "hosts": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,8}(\\.[a-z]{1,5}){0,2}$"},
                                          "maxItems": 2},
        "tls": {"anyOf": [{"type": "null"}, obj({"cert": S, "verify": {"type": "boolean"}})]},
    }, required=["log_level", "port"]),
    "chain_of_thought": obj({"steps": {"type": "array", "maxItems": 3,
                                       "items": {"type": "string", "maxLength": 10}},
                             "answer": I(0, 100)}),
}


# Schemas the grammar engine cannot hold answers to: the server refuses them
# (400) naming the keyword and where it is, rather than answering unconstrained.
# name -> (schema, words the error must hold)
REFUSED_SCHEMAS = {
    "all_of_constraints": ({"allOf": [{"type": "integer"}, {"minimum": 1}]}, "'allOf' of 2 schemas at /allOf"),
    "multiple_of_over_a_wide_range": (obj({"n": {"type": "integer", "minimum": 0, "maximum": 10 ** 9,
                                                  "multipleOf": 7}}),
                                      "'multipleOf' over a range of more than 4096 multiples at "
                                      "/properties/n/multipleOf"),
}

# Not here: maxLength beside pattern, which the grammar engine (like
# llama.cpp's converter) ignores; grammar_test.cpp pins that down.

# Prompts other than SCHEMA_PROMPT: ones that push the model toward an invalid value.
SCHEMA_PROMPTS = {
    "format_date_prompted_impossible_day": "Answer with JSON. The date is 2023-02-31.",
    "format_time_prompted_leap_second": "Answer with JSON. The time is 12:30:60Z.",
}


def _has_items_array(schema):
    if isinstance(schema, list):
        return any(_has_items_array(v) for v in schema)
    if not isinstance(schema, dict):
        return False
    if isinstance(schema.get("items"), list):
        return True
    return any(_has_items_array(v) for k, v in schema.items() if k not in ("enum", "const"))


def _as_llama_reads(schema):
    """`schema` with every tuple-form `items` (an array) written as llama.cpp
    reads it, in 2020-12 terms: those items in order, no others, all present."""
    if isinstance(schema, list):
        return [_as_llama_reads(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (v if k in ("enum", "const") else _as_llama_reads(v)) for k, v in schema.items()}
    if isinstance(schema.get("items"), list):
        out["prefixItems"] = out.pop("items")
        out["items"] = False
        out["minItems"] = out["maxItems"] = len(schema["items"])
    return out


# jsonschema's checks for "date", "time" and "date-time" are RFC 3339's,
# except that "date" rejects the year 0000 (RFC 3339: any 4 digits) and
# "time" every leap second; these are RFC 3339's as the JSON Schema test
# suite reads it: the day within its month, a leap second only at 23:59:60 UTC.
FORMATS = jsonschema.FormatChecker()
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(?:\.[0-9]+)?"
                   r"(?:[zZ]|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))")


def _days_in_month(year, month):
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]


@FORMATS.checks("date")
def _is_date(value):
    if not isinstance(value, str):
        return True
    m = _DATE.fullmatch(value)
    if not m:
        return False
    year, month, day = map(int, m.groups())
    return 1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)


@FORMATS.checks("time")
def _is_time(value):
    if not isinstance(value, str):
        return True
    m = _TIME.fullmatch(value)
    if not m:
        return False
    if m[3] != "60":
        return True
    offset = 0 if m[4] is None else (1 if m[4] == "+" else -1) * (int(m[5]) * 60 + int(m[6]))
    return (int(m[1]) * 60 + int(m[2]) - offset) % (24 * 60) == 23 * 60 + 59


@FORMATS.checks("date-time")
def _is_date_time(value):
    if not isinstance(value, str):
        return True
    parts = re.split("[Tt]", value)
    return len(parts) == 2 and _is_date(parts[0]) and _is_time(parts[1])


def validate(schema, value):
    """Raises jsonschema.ValidationError unless `value` is valid."""
    if _has_items_array(schema):
        # Draft 7 reads `items` as a tuple but lets it be shorter or longer;
        # llama.cpp (and the server) read exactly those items.
        jsonschema.Draft7Validator(schema, format_checker=FORMATS).validate(value)
        schema = _as_llama_reads(schema)
    jsonschema.Draft202012Validator(schema, format_checker=FORMATS).validate(value)


# ---------------------------------------------------------------------------
# GBNF grammars (llama.cpp's dialect), each with its judge and examples the
# judge must accept and reject. Every language is finite and its longest
# string shorter than MAX_TOKENS characters, so that generation always ends
# by the grammar (`*` and `+` are unbounded and so not used).

def _paren_tree(text, i=0):
    """(children, end) of the group of balanced parentheses at text[i]."""
    if i >= len(text) or text[i] != "(":
        raise ValueError(f"expected ( at {i}")
    i += 1
    children = []
    while i < len(text) and text[i] == "(":
        child, i = _paren_tree(text, i)
        children.append(child)
    if i >= len(text) or text[i] != ")":
        raise ValueError(f"expected ) at {i}")
    return children, i + 1


def judge_nested_parens(text):
    """One group holding at most 3 groups of at most 2 empty groups each."""
    try:
        tree, end = _paren_tree(text)
    except ValueError:
        return False
    return end == len(text) and len(tree) <= 3 and all(
        len(child) <= 2 and all(g == [] for g in child) for child in tree)


_BRACKETS = {"(": ")", "[": "]", "{": "}"}


def judge_mixed_brackets(text):
    """A bracket group ((), [] or {}) holding at most 2 groups of () or [],
    each empty or holding 1 to 3 lower-case letters."""
    def inner(i):
        if i >= len(text) or text[i] not in "([":
            return None
        close = _BRACKETS[text[i]]
        j = i + 1
        while j < len(text) and text[j].isascii() and text[j].islower():
            j += 1
        if j - (i + 1) > 3 or j >= len(text) or text[j] != close:
            return None
        return j + 1

    if not text or text[0] not in _BRACKETS:
        return False
    i, n = 1, 0
    while (j := inner(i)) is not None:
        i, n = j, n + 1
    return n <= 2 and i == len(text) - 1 and text[i] == _BRACKETS[text[0]]


def judge_sexpr(text):
    """(op arg{1,3}) where an arg is a number or (op number{1,3})."""
    tokens = re.findall(r"\(|\)| |[^() ]+", text)
    if "".join(tokens) != text:
        return False
    pos = 0

    def take(expected=None):
        nonlocal pos
        if pos >= len(tokens) or (expected is not None and tokens[pos] != expected):
            raise ValueError(pos)
        pos += 1
        return tokens[pos - 1]

    def number():
        if not re.fullmatch(r"0|-?[1-9][0-9]{0,2}", take()):
            raise ValueError(pos)

    def form(depth):
        take("(")
        if take() not in ("+", "*", "max", "min"):
            raise ValueError(pos)
        n = 0
        while pos < len(tokens) and tokens[pos] == " ":
            take(" ")
            if depth == 0 and tokens[pos] == "(":
                form(1)
            else:
                number()
            n += 1
        take(")")
        if not 1 <= n <= 3:
            raise ValueError(pos)

    try:
        form(0)
    except (ValueError, IndexError):
        return False
    return pos == len(tokens)


class ArithParser:
    """expr := term (('+'|'-') term){0,2}; term := factor (('*'|'/') factor){0,2};
    factor := number | '(' number (('+'|'-') number){1,2} ')'; number := 1-3 digits."""

    def __init__(self, text):
        self.text, self.i = text, 0

    def peek(self):
        return self.text[self.i] if self.i < len(self.text) else ""

    def number(self):
        j = self.i
        while self.peek().isascii() and self.peek().isdigit():
            self.i += 1
        if not 1 <= self.i - j <= 3:
            raise ValueError(self.i)

    def chain(self, item, ops, lo, hi):
        item()
        n = 0
        while self.peek() != "" and self.peek() in ops:
            self.i += 1
            item()
            n += 1
        if not lo <= n <= hi:
            raise ValueError(self.i)

    def factor(self):
        if self.peek() == "(":
            self.i += 1
            self.chain(self.number, "+-", 1, 2)
            if self.peek() != ")":
                raise ValueError(self.i)
            self.i += 1
        else:
            self.number()

    def term(self):
        self.chain(self.factor, "*/", 0, 2)

    @classmethod
    def judge(cls, text):
        p = cls(text)
        try:
            p.chain(p.term, "+-", 0, 2)
        except ValueError:
            return False
        return p.i == len(text)


def judge_json_int_list(text):
    if not re.fullmatch(r"\[(?:(?:0|-?[1-9][0-9]{0,2})(?:, ?(?:0|-?[1-9][0-9]{0,2})){0,5})?\]", text):
        return False
    value = json.loads(text)
    return isinstance(value, list) and len(value) <= 6 and all(type(v) is int and -999 <= v <= 999 for v in value)


def judge_json_small_object(text):
    if not re.fullmatch(r'\{"[a-z]{1,5}": (?:0|[1-9][0-9]{0,2}|true|false|null|"[a-z]{0,6}")'
                        r'(?:, "[a-z]{1,5}": (?:0|[1-9][0-9]{0,2}|true|false|null|"[a-z]{0,6}")){0,2}\}', text):
        return False
    return isinstance(json.loads(text), dict)


def judge_ipv4(text):
    octet = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
    if not re.fullmatch(rf"{octet}(?:\.{octet}){{3}}", text):
        return False
    return all(0 <= int(p) <= 255 and str(int(p)) == p for p in text.split("."))


def rx(pattern):
    """A judge: the whole answer matches `pattern`."""
    compiled = re.compile(pattern)
    return lambda text: compiled.fullmatch(text) is not None


# name -> (grammar, judge, accepted examples, rejected examples)
GRAMMARS = {
    "arithmetic_bounded_parens": (r'''
root ::= expr
expr ::= term (add-op term){0,2}
term ::= factor (mul-op factor){0,2}
factor ::= number | "(" number (add-op number){1,2} ")"
add-op ::= "+" | "-"
mul-op ::= "*" | "/"
number ::= [0-9]{1,3}
''', ArithParser.judge, ["1", "12+3*4", "(1+2)*3-4/5", "999*(1-2+3)/7"],
        ["", "1+", "(1)", "1234", "1+2+3+4", "((1+2))", "1 + 2"]),
    "comma_list_of_words": (r'''
root ::= word ("," " "? word){0,5}
word ::= [a-z]{1,8}
''', rx(r"[a-z]{1,8}(?:, ?[a-z]{1,8}){0,5}"), ["a", "apple, pear,fig"],
        ["", "a,,b", "a ,b", "A", "a, b, c, d, e, f, g"]),
    "c_identifier_list": (r'''
root ::= ident ("," " " ident){0,3}
ident ::= [a-zA-Z_] [a-zA-Z0-9_]{0,15}
''', rx(r"[a-zA-Z_][a-zA-Z0-9_]{0,15}(?:, [a-zA-Z_][a-zA-Z0-9_]{0,15}){0,3}"), ["_x1", "main, argc, argv"],
        ["1abc", "a-b", "a,b", ""]),
    "c_declaration": (r'''
root ::= type " " ident array? ";"
type ::= "int" | "char" | "float" | "double" | "unsigned " ("int" | "char")
ident ::= [a-zA-Z_] [a-zA-Z0-9_]{0,9}
array ::= "[" [1-9] [0-9]{0,2} "]"
''', rx(r"(?:int|char|float|double|unsigned (?:int|char)) [a-zA-Z_][a-zA-Z0-9_]{0,9}(?:\[[1-9][0-9]{0,2}\])?;"),
        ["int x;", "unsigned char buf[256];"], ["int x", "long x;", "int x[0];", "unsigned x;"]),
    "key_value_lines": (r'''
root ::= line{1,4}
line ::= key "=" value "\n"
key ::= [a-z_] [a-z0-9_]{0,7}
value ::= [0-9]{1,4} | "true" | "false" | "\"" [^"\\\n]{0,10} "\""
''', rx(r'(?:[a-z_][a-z0-9_]{0,7}=(?:[0-9]{1,4}|true|false|"[^"\\\n]{0,10}")\n){1,4}'),
        ['port=80\n', 'name="x y"\ndebug=true\n'], ["port=80", "Port=80\n", 'a="b\n"\n', ""]),
    "iso_date": (r'''
root ::= year "-" month "-" day
year ::= [12] [0-9]{3}
month ::= "0" [1-9] | "1" [0-2]
day ::= "0" [1-9] | [12] [0-9] | "3" [01]
''', rx(r"[12][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"), ["2024-02-29", "1999-12-31"],
        ["2024-13-01", "2024-00-10", "2024-01-32", "3024-01-01", "24-01-01"]),
    "clock_time_optional_seconds": (r'''
root ::= hour ":" minute (":" minute)? (" " ("AM" | "PM"))?
hour ::= [01] [0-9] | "2" [0-3]
minute ::= [0-5] [0-9]
''', rx(r"(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9])?(?: (?:AM|PM))?"), ["23:59", "07:05:09 PM"],
        ["24:00", "12:60", "1:00", "12:00 am"]),
    "json_like_int_list": (r'''
root ::= "[" (num ("," " "? num){0,5})? "]"
num ::= "0" | "-"? [1-9] [0-9]{0,2}
''', judge_json_int_list, ["[]", "[0, -12,345]"], ["[01]", "[1,]", "[ 1]", "[-0]", "[1, 2, 3, 4, 5, 6, 7]"]),
    "json_like_string_list": (r'''
root ::= "[" (str (", " str){0,3})? "]"
str ::= "\"" [a-z ]{0,8} "\""
''', rx(r'\[(?:"[a-z ]{0,8}"(?:, "[a-z ]{0,8}"){0,3})?\]'), ['[]', '["", "a b"]'], ['["A"]', '["a","b"]', "[a]"]),
    "json_like_small_object": (r'''
root ::= "{" pair (", " pair){0,2} "}"
pair ::= "\"" [a-z]{1,5} "\": " value
value ::= "0" | [1-9] [0-9]{0,2} | "true" | "false" | "null" | "\"" [a-z]{0,6} "\""
''', judge_json_small_object, ['{"a": 1}', '{"ab": "x", "c": null, "d": true}'],
        ["{}", '{"a":1}', '{"a": 01}', '{"a": "B"}']),
    "nested_parens_depth_3": (r'''
root ::= level1
level1 ::= "(" level2{0,3} ")"
level2 ::= "(" level3{0,2} ")"
level3 ::= "()"
''', judge_nested_parens, ["()", "(()(()())())"], ["", "(((())))", "(()()()())", "((()()()))", ")("]),
    "mixed_brackets_depth_2": (r'''
root ::= "(" inner{0,2} ")" | "[" inner{0,2} "]" | "{" inner{0,2} "}"
inner ::= "(" leaf? ")" | "[" leaf? "]"
leaf ::= [a-z]{1,3}
''', judge_mixed_brackets, ["{}", "[(ab)[]]", "{[xyz](q)}"], ["{{}}", "[(]", "(abcd)", "((abcd))", "[()()()]", "{(}"]),
    "s_expression_depth_2": (r'''
root ::= "(" op (" " arg){1,3} ")"
arg ::= num | "(" op (" " num){1,3} ")"
op ::= "+" | "*" | "max" | "min"
num ::= "0" | "-"? [1-9] [0-9]{0,2}
''', judge_sexpr, ["(+ 1 2)", "(max (min 1 -2) 0 (* 3 4 5))"], ["(+)", "(+ (+ (+ 1)))", "(- 1 2)", "(+ 01)"]),
    "repetition_exact_and_ranges": (r'''
root ::= "x"{3} "-" [0-9]{2,4} "-" [A-Z]{1} [a-z]{0,2}
''', rx(r"xxx-[0-9]{2,4}-[A-Z][a-z]{0,2}"), ["xxx-12-A", "xxx-1234-Zab"], ["xx-12-A", "xxx-1-A", "xxx-12-abc"]),
    "hex_color_and_number": (r'''
root ::= "#" [0-9a-fA-F]{6} " " "0x" [0-9a-fA-F]{1,8}
''', rx(r"#[0-9a-fA-F]{6} 0x[0-9a-fA-F]{1,8}"), ["#00ffAA 0x1F"], ["#00ffAG 0x1", "#fff 0x1", "#000000 0x"]),
    "negated_class_quoted_string": (r'''
root ::= "\"" ( [^"\\\n] | "\\" ["\\nt] ){1,12} "\""
''', rx(r'"(?:[^"\\\n]|\\["\\nt]){1,12}"'), ['"a b"', r'"say \"hi\""', '"caf\u00e9"'],
        ['""', '"a"b"', '"\\x"', '"a\nb"']),
    "negated_class_tag_and_text": (r'''
root ::= "<" [a-z]{1,6} ">" [^<>&\n]{0,12} "</" [a-z]{1,6} ">"
''', rx(r"<[a-z]{1,6}>[^<>&\n]{0,12}</[a-z]{1,6}>"), ["<b>bold</b>", "<p></i>"],
        ["<b>a<b</b>", "<B>x</B>", "<b>&</b>"]),
    # llama.cpp: a newline after `|` continues the rule, even outside parentheses
    "alternation_continued_after_bar": (r'''
root ::= "GET " path |
    "POST " path " " [0-9]{1,3} |
    "DELETE " path
path ::= "/" [a-z]{1,6} ("/" [0-9]{1,3})?
''', rx(r"(?:GET |DELETE )/[a-z]{1,6}(?:/[0-9]{1,3})?|POST /[a-z]{1,6}(?:/[0-9]{1,3})? [0-9]{1,3}"),
        ["GET /users/12", "POST /items 5", "DELETE /x"], ["PUT /x", "POST /items", "GET users", "GET /x/"]),
    # llama.cpp: `.` is any character (a newline too)
    "any_char_dot": (r'''
root ::= "TODO: " .{3,12}
''', rx(r"(?s)TODO: .{3,12}"), ["TODO: fix", "TODO: a\nb", "TODO: \u00e9\u00e9\u00e9"],
        ["TODO: ab", "todo: abc", "TODO: " + "x" * 13]),
    "alternation_words": (r'''
root ::= answer " (" confidence ")"
answer ::= "yes" | "no" | "maybe" | "it depends"
confidence ::= "low" | "medium" | "high"
''', rx(r"(?:yes|no|maybe|it depends) \((?:low|medium|high)\)"), ["yes (low)", "it depends (high)"],
        ["yes(low)", "Yes (low)", "no (very high)"]),
    "empty_alternative_whitespace": (r'''
root ::= "[" ws "1" ws "," ws "2" ws "]"
ws ::= | " " | "  "
''', rx(r"\[ {0,2}1 {0,2}, {0,2}2 {0,2}\]"), ["[1,2]", "[  1 ,  2 ]"], ["[ 1,2,]", "[   1,2]", "[1;2]"]),
    "empty_alternative_in_group_and_comment": (r'''
# an optional sign, written llama.cpp's way: an empty alternative
root ::= sign digits ( | "." [0-9]{1,2}) unit
sign ::= | "-" | "+"   # nothing, or a sign
digits ::= [0-9]{1,4}
unit ::= ( | " kg" | " g")
''', rx(r"[+-]?[0-9]{1,4}(?:\.[0-9]{1,2})?(?: kg| g)?"), ["0", "-12.5 kg", "+3 g"], ["", "1.", "1.234", "1kg"]),
    "escapes_and_unicode": (r'''
root ::= "\x41" [\x30-\x39]{1,3} "\t" ("caf\u00e9" | "na\u00efve" | "\u65e5\u672c") "\n"? 
''', rx("A[0-9]{1,3}\t(?:caf\u00e9|na\u00efve|\u65e5\u672c)\n?"), ["A1\tcaf\u00e9", "A123\t\u65e5\u672c\n"],
        ["A1 caf\u00e9", "A\tcafe", "B1\tcaf\u00e9"]),
    "csv_rows": (r'''
root ::= row ("\n" row){0,2}
row ::= field "," field "," field
field ::= [0-9]{1,3} | "\"" [a-z]{0,5} "\""
''', rx(r'(?:[0-9]{1,3}|"[a-z]{0,5}")(?:,(?:[0-9]{1,3}|"[a-z]{0,5}")){2}'
       r'(?:\n(?:[0-9]{1,3}|"[a-z]{0,5}")(?:,(?:[0-9]{1,3}|"[a-z]{0,5}")){2}){0,2}'),
        ['1,2,3', '"a","",""\n1,22,333'], ["1,2", "1,2,3,4", "1,2,3\n", '"A",1,2']),
    "email_like_address": (r'''
root ::= local "@" domain "." tld
local ::= [a-z0-9]{1,8} ("." [a-z0-9]{1,8})?
domain ::= [a-z]{1,8} ("-" [a-z]{1,8})?
tld ::= "com" | "org" | "net" | "io"
''', rx(r"[a-z0-9]{1,8}(?:\.[a-z0-9]{1,8})?@[a-z]{1,8}(?:-[a-z]{1,8})?\.(?:com|org|net|io)"),
        ["a@b.io", "j.doe@my-site.com"], ["@b.io", "a@b.c", "a..b@c.com", "A@b.com"]),
    "semver_prerelease": (r'''
root ::= num "." num "." num ("-" pre ("." [0-9])?)?
num ::= "0" | [1-9] [0-9]{0,2}
pre ::= "alpha" | "beta" | "rc"
''', rx(r"(?:0|[1-9][0-9]{0,2})(?:\.(?:0|[1-9][0-9]{0,2})){2}(?:-(?:alpha|beta|rc)(?:\.[0-9])?)?"),
        ["1.0.0", "10.20.300-rc.1"], ["1.0", "01.0.0", "1.0.0-gamma", "1.0.0-rc."]),
    "ipv4_address": (r'''
root ::= octet "." octet "." octet "." octet
octet ::= "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]
''', judge_ipv4, ["0.0.0.0", "255.249.10.1"], ["256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1"]),
    "boolean_expression": (r'''
root ::= atom (op atom){0,3}
op ::= " && " | " || "
atom ::= "!"? (var | "true" | "false")
var ::= [a-z] [a-z0-9]{0,4}
''', rx(r"!?(?:[a-z][a-z0-9]{0,4}|true|false)(?: (?:&&|\|\|) !?(?:[a-z][a-z0-9]{0,4}|true|false)){0,3}"),
        ["a", "!x1 && true || y"], ["a &&", "a&&b", "!!a", "1a"]),
    "sql_select": (r'''
root ::= "SELECT " cols " FROM " name where? ";"
cols ::= "*" | name (", " name){0,2}
where ::= " WHERE " name " " cmp " " [0-9]{1,3}
cmp ::= "=" | "<" | ">" | "<=" | ">="
name ::= [a-z_] [a-z0-9_]{0,7}
''', rx(r"SELECT (?:\*|[a-z_][a-z0-9_]{0,7}(?:, [a-z_][a-z0-9_]{0,7}){0,2}) FROM [a-z_][a-z0-9_]{0,7}"
       r"(?: WHERE [a-z_][a-z0-9_]{0,7} (?:=|<|>|<=|>=) [0-9]{1,3})?;"),
        ["SELECT * FROM t;", "SELECT a, b FROM users WHERE id >= 10;"], ["SELECT FROM t;", "select * from t;",
                                                                           "SELECT * FROM t WHERE a != 1;"]),
    "markdown_bullets": (r'''
root ::= ("- " item "\n"){1,3}
item ::= [A-Z] [a-z ]{0,10}
''', rx(r"(?:- [A-Z][a-z ]{0,10}\n){1,3}"), ["- Milk\n", "- A\n- Bread and\n"], ["- milk\n", "-Milk\n", "- Milk"]),
    "multiline_rule_with_comments": (r'''
# a record: a name and up to two tags, laid out over several lines
root ::= (
    name          # who
    (" #" tag){0,2}  # tags
  )
name ::= [A-Z] [a-z]{1,6}
tag ::= (
    "red"
  | "green"
  | "blue"
  )
''', rx(r"[A-Z][a-z]{1,6}(?: #(?:red|green|blue)){0,2}"), ["Ann", "Bob #red #blue"],
        ["ann", "Ann #red #red #red", "Ann#red"]),
    "roman_numeral": (r'''
root ::= "M"{0,3} hundreds tens ones
hundreds ::= "CM" | "CD" | "D"? "C"{0,3}
tens ::= "XC" | "XL" | "L"? "X"{0,3}
ones ::= "IX" | "IV" | "V"? "I"{0,3}
''', rx(r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"), ["", "MCMXCIV", "XLII"],
        ["IIII", "VV", "IC", "MMMM"]),
}


# ---------------------------------------------------------------------------
# Cases: each its own test; routes and request fields alternate between cases.

ROUTES = ["completions", "chat"]
# The ways a request gives a schema: llama-server's json_schema, OpenAI's
# response_format json_schema, llama-server's response_format json_object with a schema.
SCHEMA_FIELDS = {
    "json_schema": lambda s: {"json_schema": s},
    "response_format_json_schema": lambda s: {"response_format": {"type": "json_schema",
                                                                  "json_schema": {"name": "answer", "schema": s}}},
    "response_format_json_object": lambda s: {"response_format": {"type": "json_object", "schema": s}},
}
SCHEMA_CASES = [pytest.param(name, ROUTES[i % 2], list(SCHEMA_FIELDS)[i % 3], id=name)
                for i, name in enumerate(SCHEMAS)]
GRAMMAR_CASES = [pytest.param(name, ROUTES[(i + 1) % 2], id=name) for i, name in enumerate(GRAMMARS)]


@pytest.fixture(scope="module")
def client(cohort_server):
    return OpenAI(base_url=cohort_server + "/v1", api_key="unused", max_retries=0, timeout=300)


def _ask(client, route, constraint, prompt, seed):
    """(text, finish_reason) of one request at temperature 1."""
    sampling = {"model": "any", "temperature": 1.0, "seed": seed, "max_tokens": MAX_TOKENS, "extra_body": constraint}
    if route == "completions":
        choice = client.completions.create(prompt=prompt, **sampling).choices[0]
        return choice.text, choice.finish_reason
    choice = client.chat.completions.create(messages=[{"role": "user", "content": prompt}], **sampling).choices[0]
    return choice.message.content, choice.finish_reason


def judge_answers(client, route, constraint, prompt, problem):
    """Asks with every seed of SEEDS at once; fails listing each answer that
    did not end by the grammar or of which problem(text) says what is wrong."""
    with concurrent.futures.ThreadPoolExecutor(len(SEEDS)) as pool:
        answers = list(pool.map(lambda seed: _ask(client, route, constraint, prompt, seed), SEEDS))
    found = []
    for seed, (text, finish) in zip(SEEDS, answers):
        if finish != "stop":
            found.append(f"seed {seed}: ended by {finish!r}, not by the grammar (every case's language fits "
                         f"max_tokens={MAX_TOKENS}: if this one's does, the server's language is looser): {text!r}")
        elif (what := problem(text)) is not None:
            found.append(f"seed {seed}: {what}: {text!r}")
    if found:
        pytest.fail(f"on {route} with {sorted(constraint)}:\n" + "\n".join(found))


def schema_problem(schema):
    def problem(text):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            return f"not JSON ({e})"
        try:
            validate(schema, value)
        except jsonschema.ValidationError as e:
            return f"{e.message} (at {list(e.absolute_path)})"
        return None
    return problem


@pytest.mark.parametrize("name,route,field", SCHEMA_CASES)
def test_schema_answers_validate(client, name, route, field):
    schema = SCHEMAS[name]
    judge_answers(client, route, SCHEMA_FIELDS[field](copy.deepcopy(schema)), SCHEMA_PROMPTS.get(name, SCHEMA_PROMPT),
                  schema_problem(schema))


@pytest.mark.parametrize("name", list(REFUSED_SCHEMAS))
def test_schema_the_engine_cannot_enforce_is_refused_naming_the_keyword(client, name):
    schema, words = REFUSED_SCHEMAS[name]
    jsonschema.Draft202012Validator.check_schema(schema)
    with pytest.raises(openai.BadRequestError) as refused:
        _ask(client, "chat", {"json_schema": copy.deepcopy(schema)}, SCHEMA_PROMPT, SEEDS[0])
    assert refused.value.param == "json_schema", refused.value
    assert words in str(refused.value), refused.value


@pytest.mark.parametrize("name,route", GRAMMAR_CASES)
def test_grammar_answers_are_in_the_language(client, name, route):
    gbnf, judge, _, _ = GRAMMARS[name]
    judge_answers(client, route, {"grammar": gbnf}, GRAMMAR_PROMPT,
                  lambda text: None if judge(text) else "not in the language")


# ---------------------------------------------------------------------------
# The corpus itself (no server).

def test_corpus_sizes():
    assert len(SCHEMAS) >= 50, len(SCHEMAS)
    assert len(GRAMMARS) >= 20, len(GRAMMARS)
    assert len(SCHEMA_CASES) == len(SCHEMAS) and len(GRAMMAR_CASES) == len(GRAMMARS)
    assert set(SCHEMA_PROMPTS) <= set(SCHEMAS)
    assert REFUSED_SCHEMAS and not set(REFUSED_SCHEMAS) & set(SCHEMAS)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_schemas_are_valid_schemas(name):
    schema = SCHEMAS[name]
    if _has_items_array(schema):
        jsonschema.Draft7Validator.check_schema(schema)
        schema = _as_llama_reads(schema)
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", list(GRAMMARS))
def test_grammar_judges_accept_and_reject_examples(name):
    _, judge, accepted, rejected = GRAMMARS[name]
    assert accepted and rejected
    for text in accepted:
        assert judge(text), f"{name} rejects {text!r}"
    for text in rejected:
        assert not judge(text), f"{name} accepts {text!r}"


def test_format_judges():
    assert _is_date("2024-02-29") and _is_date("0000-02-29") and not _is_date("2023-02-29")
    assert not _is_date("2024-04-31") and not _is_date("2024-13-01") and not _is_date("2024-1-01")
    assert _is_time("23:59:60Z") and _is_time("15:59:60-08:00") and _is_time("12:00:00.123+01:30")
    assert not _is_time("12:00:60Z") and not _is_time("24:00:00Z") and not _is_time("12:00:00")
    assert _is_date_time("2024-01-01T23:59:60Z") and not _is_date_time("2024-02-30T00:00:00Z")
    tuple_schema = SCHEMAS["tuple_llama_items_array"]
    validate(tuple_schema, [5, "x"])
    for bad in ([5], [5, "x", 1], ["x", 5]):
        with pytest.raises(jsonschema.ValidationError):
            validate(tuple_schema, bad)
