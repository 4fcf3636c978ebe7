"""annotate: attach a key and a value to a loop or a block, for passes and code generators.

Values are ints, floats, bools, strings, lists and string-keyed maps of those (or a sampled
value). A key already there keeps its value, as in TVM: giving it another is refused.
`for i in range(128):` → `for i in T.serial(128, annotations={"pragma_unroll": 4}):`
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.ir.stmt import Attrs, AttrValue
from tirc.ir.structural import structural_equal
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "annotate",
        "Annotate",
        inputs=(Param("target", Kind.BLOCK_OR_LOOP), Param("value", Kind.VALUE)),
        attrs=(Param("key", Kind.STR),),
    )
)
def annotate(sch: Schedule, target: SRef, value: object, key: str) -> None:
    stored = annotation_value(value, target, key)
    stmt = target.stmt
    assert stmt is not None, "apply_plan passes valid handles only"
    annotations = stmt.annotations
    if key in annotations:
        # TVM keeps the old value without a word; refusing a different value keeps the
        # results equal to TVM's and tells the user why theirs did not take.
        if structural_equal(annotations.get(key), stored):
            return
        raise ScheduleError(
            f"{describe(target)} already has the annotation '{key}' = "
            f"{annotations.get(key)!r}; unannotate it first to give it another value",
            target,
        )
    new = dataclasses.replace(stmt, annotations=annotations.set(key, stored))
    sch.state_owning(target).replace(target, new)


def _plain(value: object) -> AttrValue:
    return value


def _sequence(value: object) -> AttrValue:
    assert isinstance(value, (list, tuple))  # registered for list and tuple
    return tuple(_convert(item) for item in value)


def _mapping(value: object) -> AttrValue:
    assert isinstance(value, dict)  # registered for dict
    items = value.items()
    for name, _ in items:
        if not isinstance(name, str):
            raise _Unsupported(f"map key {name!r} is not a string")
    return Attrs(tuple((name, _convert(item)) for name, item in items))


# How each plan value becomes an annotation value; lists become tuples, maps Attrs.
_CONVERTERS: dict[type, Callable[[object], AttrValue]] = {
    bool: _plain,
    int: _plain,
    float: _plain,
    str: _plain,
    list: _sequence,
    tuple: _sequence,
    dict: _mapping,
    Attrs: _plain,
}


class _Unsupported(Exception):
    pass


def _convert(value: object) -> AttrValue:
    converter = _CONVERTERS.get(type(value))
    if converter is None:
        raise _Unsupported(f"a {type(value).__name__} cannot be an annotation value")
    return converter(value)


def annotation_value(value: object, target: SRef, key: str) -> AttrValue:
    try:
        return _convert(value)
    except _Unsupported as reason:
        raise ScheduleError(
            f"cannot annotate {describe(target)} with '{key}': {reason} (values are ints, "
            "floats, bools, strings, lists and maps of those)",
            target,
        ) from None
