"""A small JSON Schema checker (standard library only) for the schemas gpulab ships.

It understands the part of JSON Schema draft 2020-12 that ``gpulab/data/*.schema.json`` use:
``type``, ``const``, ``enum``, ``required``, ``properties``, ``additionalProperties``,
``propertyNames``, ``items``, ``minItems``, ``minLength``, ``pattern``, ``minimum``,
``exclusiveMinimum``, ``allOf`` and ``if``/``then``/``else``. Annotations (``title``,
``description``, ``$schema``, ``$id``) are ignored. A schema that uses any other keyword is
refused, so a schema cannot grow past what is checked without this module learning it.

Its messages are worded as the ``jsonschema`` package words them, so a report is judged the
same with or without the ``course`` extra (the tests compare the two on broken reports).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Keywords that describe and check nothing.
_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description"})

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def _equal(a, b) -> bool:
    """JSON equality: ``true`` is not ``1``, as JSON Schema's ``const`` and ``enum`` compare."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _is_number(value) -> bool:
    return _TYPES["number"](value)


def schema_errors(instance, schema: dict, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """Every way ``instance`` breaks ``schema``, as (path inside the instance, message).

    Parameters
    ----------
    instance
        The JSON value (dicts, lists, str, numbers, bools, None).
    schema : dict
        A schema that uses only the keywords listed in this module's description.
    path : tuple
        Where ``instance`` sits in the whole document (keys and list indices).

    Raises
    ------
    ValueError
        If ``schema`` uses a keyword this checker does not know.

    Examples
    --------
    >>> list(schema_errors({"n": 0}, {"properties": {"n": {"minimum": 1}}}))
    [(('n',), '0 is less than the minimum of 1')]
    """
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS or keyword in ("then", "else"):
            continue
        check = _KEYWORDS.get(keyword)
        if check is None:
            raise ValueError(f"schema keyword {keyword!r} is not supported by this checker")
        yield from check(instance, value, schema, path)


def _type(instance, types, schema, path):
    wanted = [types] if isinstance(types, str) else types
    if not any(_TYPES[t](instance) for t in wanted):
        yield path, f"{instance!r} is not of type {', '.join(map(repr, wanted))}"


def _const(instance, const, schema, path):
    if not _equal(instance, const):
        yield path, f"{const!r} was expected"


def _enum(instance, options, schema, path):
    if not any(_equal(instance, option) for option in options):
        yield path, f"{instance!r} is not one of {options!r}"


def _required(instance, names, schema, path):
    if isinstance(instance, dict):
        for name in names:
            if name not in instance:
                yield path, f"{name!r} is a required property"


def _properties(instance, properties, schema, path):
    if isinstance(instance, dict):
        for name, subschema in properties.items():
            if name in instance:
                yield from schema_errors(instance[name], subschema, (*path, name))


def _additional_properties(instance, allowed, schema, path):
    if not isinstance(instance, dict):
        return
    extras = [name for name in instance if name not in schema.get("properties", {})]
    if allowed is False and extras:
        verb = "was" if len(extras) == 1 else "were"
        listed = ", ".join(map(repr, sorted(extras, key=str)))
        yield path, f"Additional properties are not allowed ({listed} {verb} unexpected)"
    elif isinstance(allowed, dict):
        for name in extras:
            yield from schema_errors(instance[name], allowed, (*path, name))


def _property_names(instance, subschema, schema, path):
    if isinstance(instance, dict):
        for name in instance:
            for _, message in schema_errors(name, subschema, path):
                yield path, message


def _items(instance, subschema, schema, path):
    if isinstance(instance, list):
        for index, item in enumerate(instance):
            yield from schema_errors(item, subschema, (*path, index))


def _too_short(instance, least: int) -> str:
    return f"{instance!r} should be non-empty" if least == 1 else f"{instance!r} is too short"


def _min_items(instance, least, schema, path):
    if isinstance(instance, list) and len(instance) < least:
        yield path, _too_short(instance, least)


def _min_length(instance, least, schema, path):
    if isinstance(instance, str) and len(instance) < least:
        yield path, _too_short(instance, least)


def _pattern(instance, pattern, schema, path):
    if isinstance(instance, str) and not re.search(pattern, instance):
        yield path, f"{instance!r} does not match {pattern!r}"


def _minimum(instance, least, schema, path):
    if _is_number(instance) and instance < least:
        yield path, f"{instance!r} is less than the minimum of {least!r}"


def _exclusive_minimum(instance, bound, schema, path):
    if _is_number(instance) and instance <= bound:
        yield path, f"{instance!r} is less than or equal to the minimum of {bound!r}"


def _all_of(instance, subschemas, schema, path):
    for subschema in subschemas:
        yield from schema_errors(instance, subschema, path)


def _if(instance, condition, schema, path):
    holds = next(schema_errors(instance, condition, path), None) is None
    branch = schema.get("then" if holds else "else")
    if branch is not None:
        yield from schema_errors(instance, branch, path)


_KEYWORDS = {
    "type": _type,
    "const": _const,
    "enum": _enum,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "propertyNames": _property_names,
    "items": _items,
    "minItems": _min_items,
    "minLength": _min_length,
    "pattern": _pattern,
    "minimum": _minimum,
    "exclusiveMinimum": _exclusive_minimum,
    "allOf": _all_of,
    "if": _if,
}
