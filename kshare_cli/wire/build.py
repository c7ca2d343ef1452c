"""Build kio messages of any version from one version-agnostic description.

kio generates one frozen dataclass per API version, each with exactly the
fields of that version. Code that answers or sends several versions would
otherwise repeat itself per version; instead it describes the message once,
as nested mappings with every field it knows (snake_case, as kio names them),
and ``build`` keeps the fields the chosen version has, converting plain ints to
the error codes and durations kio expects.

Dropping a field only other versions have is the point; dropping a key that no
version of the message defines would hide a typo (``type_filter`` for
ListGroups' ``types_filter`` gives an empty filter: every group type is
listed), so ``build`` raises TypeError for such a key.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import sys
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Final, TypeVar, cast

from kio.schema.errors import ErrorCode
from kio.schema.index import PayloadEntityType, schema_name_map
from kio.static.constants import EntityType

T = TypeVar("T")

_Converter = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _error_code(value: Any) -> Any:
    return value if isinstance(value, ErrorCode) else ErrorCode(int(value))


def _milliseconds(value: Any) -> Any:
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=int(value))


def _entity_of(annotation: Any) -> type | None:
    """The dataclass inside ``X``, ``X | None`` or ``tuple[X, ...]``, if any."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _entity_of(arg)
            if found is not None:
                return found
        return None
    if origin is tuple:
        args = typing.get_args(annotation)
        return _entity_of(args[0]) if args else None
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    return None


def _is_array(annotation: Any) -> bool:
    """``tuple[X, ...]`` or a nullable one (``tuple[X, ...] | None``, e.g. Metadata's topics)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_array(arg) for arg in typing.get_args(annotation))
    return origin is tuple


def _resolve_hints(cls: type) -> dict[str, Any]:
    module = sys.modules[cls.__module__]
    return typing.get_type_hints(cls, vars(module))


@cache
def _plan(cls: type) -> tuple[tuple[str, bool, _Converter], ...]:
    hints = _resolve_hints(cls)
    plan: list[tuple[str, bool, _Converter]] = []
    for field in dataclasses.fields(cls):
        kafka_type = field.metadata.get("kafka_type")
        annotation = hints[field.name]
        entity = _entity_of(annotation)
        converter: _Converter
        if entity is not None:
            converter = _nested_converter(entity, _is_array(annotation))
        elif kafka_type == "error_code":
            converter = _error_code
        elif kafka_type in ("timedelta_i32", "timedelta_i64"):
            converter = _milliseconds
        else:
            converter = _identity
        is_array = _is_array(annotation) and entity is None
        if is_array:
            converter = _array_converter(converter)
        plan.append((field.name, field.default is not dataclasses.MISSING, converter))
    return tuple(plan)


def _array_converter(inner: _Converter) -> _Converter:
    def convert(value: Any) -> Any:
        return None if value is None else tuple(inner(v) for v in value)

    return convert


def _nested_converter(entity: type, is_array: bool) -> _Converter:
    def one(value: Any) -> Any:
        if value is None or dataclasses.is_dataclass(value):
            return value
        return build(entity, value)

    if not is_array:
        return one

    def many(value: Any) -> Any:
        return None if value is None else tuple(one(v) for v in value)

    return many


_PAYLOADS: Final[Mapping[str, PayloadEntityType]] = {
    "request": EntityType.request,
    "response": EntityType.response,
}


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(cls))


@cache
def _entities(root: type) -> dict[tuple[str, ...], type]:
    """Every entity of a message version by its name path (``("topics", "partitions")``)."""
    found: dict[tuple[str, ...], type] = {(): root}
    pending: list[tuple[tuple[str, ...], type]] = [((), root)]
    while pending:
        path, cls = pending.pop()
        hints = _resolve_hints(cls)
        for field in dataclasses.fields(cls):
            entity = _entity_of(hints[field.name])
            if entity is not None and (path + (field.name,)) not in found:
                found[path + (field.name,)] = entity
                pending.append((path + (field.name,), entity))
    return found


def _resolve_entity(path: str) -> type:
    module_name, _, class_name = path.partition(":")
    module = importlib.import_module(module_name)
    entity: type = getattr(module, class_name)
    return entity


@cache
def _known_keys(cls: type) -> frozenset[str]:
    """The keys any version of ``cls``'s message defines at ``cls``'s place in it.

    kio's modules are ``kio.schema.<api>.v<N>.<request|response>``; a nested
    entity is matched across versions by its name path from the message's root.
    Only computed for a key the chosen version lacks, so the common path loads
    no other version.
    """
    parts = cls.__module__.split(".")
    kind = _PAYLOADS.get(parts[-1])
    if len(parts) != 5 or parts[:2] != ["kio", "schema"] or kind is None:
        return _field_names(cls)
    api = parts[2]
    versions = schema_name_map.get(api, {})
    this_version = versions.get(int(parts[3].removeprefix("v")), {})
    if kind not in this_version:
        return _field_names(cls)
    paths = [
        path
        for path, entity in _entities(_resolve_entity(this_version[kind])).items()
        if entity is cls
    ]
    known = set(_field_names(cls))
    for entities in versions.values():
        if kind not in entities:
            continue
        tree = _entities(_resolve_entity(entities[kind]))
        for path in paths:
            if path in tree:
                known |= _field_names(tree[path])
    return frozenset(known)


def _reject_unknown_keys(cls: type, data: Mapping[str, Any]) -> None:
    unknown = sorted(data.keys() - _known_keys(cls))
    if unknown:
        api = cls.__module__.rsplit(".", 2)[0]
        raise TypeError(
            f"{cls.__qualname__} ({api}) has no field {', '.join(map(repr, unknown))}"
            " in any version"
        )


def build(cls: type[T], data: Mapping[str, Any]) -> T:
    """An instance of kio type ``cls`` from ``data``, ignoring keys the version lacks.

    A field the version has but ``data`` omits takes its schema default; one
    without a default raises KeyError naming it, and a key that no version of
    the message defines raises TypeError naming it: both are programming errors.
    """
    kwargs: dict[str, Any] = {}
    # A class is hashable at run time; mypy does not know ``type[T]`` is Hashable.
    for name, has_default, converter in _plan(cls):  # type: ignore[arg-type]
        if name in data:
            kwargs[name] = converter(data[name])
        elif not has_default:
            _reject_unknown_keys(cast(type, cls), data)  # a misspelt key says so first
            raise KeyError(f"{cls.__module__}.{cls.__qualname__} needs field {name!r}")
    if len(kwargs) != len(data):  # keys this version lacks: fine only if another has them
        _reject_unknown_keys(cast(type, cls), data)
    return cls(**kwargs)


def has_field(cls: type, name: str) -> bool:
    """Whether this version of a message has a field (e.g. topic ids from Fetch v13)."""
    return any(field.name == name for field in dataclasses.fields(cls))
