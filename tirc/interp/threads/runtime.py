"""The names generated code calls: arithmetic helpers, bounds faults, vector lanes, memory.

`base_namespace()` is the global namespace every compiled function starts from; names begin
with an underscore so that they can never clash with the program's own variable names.
"""

from __future__ import annotations

import array
from functools import cache
from typing import Any

from tirc.interp.fault import Fault, index_outside
from tirc.interp.memory.storage import allocate, fresh_copy, view_of
from tirc.interp.semantics import arith
from tirc.interp.semantics.values import NARROW, round_f32
from tirc.interp.threads import scheduler as threads
from tirc.ir import integer
from tirc.ir.dtype import parse_dtype

_INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def out_of_bounds(site: int, dim: int, index: int, extent: int) -> int:
    raise Fault(site, index_outside(index, extent, dim))


def fault(site: int, message: str) -> None:
    raise Fault(site, message)


def lane_offsets(
    site: int,
    base: int,
    parts: tuple[tuple[Any, int, int], ...],
    lanes: int,
    element_lanes: int,
    mask: Any,
) -> tuple[int | None, ...]:
    """The element index of each lane (None where the mask is off), bounds-checked."""
    if mask is None and element_lanes == 1 and len(parts) == 1:
        # the common case (a flat buffer's Ramp index): bounds checked once, by extremes;
        # out of bounds, the lane by lane loop below reports the first bad lane
        index, stride, extent = parts[0]
        if isinstance(index, tuple) and index and 0 <= min(index) and max(index) < extent:
            if stride == 1:
                return index if base == 0 else tuple([base + value for value in index])
            return tuple([base + value * stride for value in index])
    offsets: list[int | None] = []
    for lane in range(lanes):
        if mask is not None and not (mask[lane] if isinstance(mask, tuple) else mask):
            offsets.extend([None] * element_lanes)
            continue
        offset = base
        for dim, (index, stride, extent) in enumerate(parts):
            value = index[lane] if isinstance(index, tuple) else index
            if not 0 <= value < extent:
                out_of_bounds(site, dim, value, extent)
            offset += value * stride
        offsets.extend(offset * element_lanes + j for j in range(element_lanes))
    return tuple(offsets)


def vector_load(memory: memoryview, offsets: tuple[int | None, ...], table: Any) -> tuple:
    first = _contiguous(offsets)
    if first is not None:
        values = memory[first : first + len(offsets)].tolist()
    else:
        values = [0 if offset is None else memory[offset] for offset in offsets]
    if table is not None:
        return tuple(table[v] for v in values)
    return tuple(values)


def vector_store(
    memory: memoryview, offsets: tuple[int | None, ...], values: tuple, encode: Any
) -> None:
    first = _contiguous(offsets)
    if first is not None and encode is None and memory.format in _ARRAY_CODES:
        try:
            packed = array.array(memory.format, values)
        except (OverflowError, TypeError, ValueError):
            pass  # stored lane by lane below, which reports what is wrong
        else:
            if len(packed) == len(offsets):
                memory[first : first + len(offsets)] = memoryview(packed)
                return
    for offset, value in zip(offsets, values, strict=True):
        if offset is not None:
            memory[offset] = value if encode is None else encode(value)


# memoryview formats the array module packs alike
_ARRAY_CODES = frozenset("bBhHiIlLqQfd")


def _contiguous(offsets: tuple[int | None, ...]) -> int | None:
    """The first offset when the offsets are consecutive elements (no masked lane)."""
    if len(offsets) < 2:
        return None
    first, last = offsets[0], offsets[-1]
    if first is None or last is None or last - first != len(offsets) - 1:
        return None
    return first if offsets == tuple(range(first, last + 1)) else None


def select(condition: bool, true_value: Any, false_value: Any) -> Any:
    """T.Select: its arguments are all evaluated (in order) before one is picked."""
    return true_value if condition else false_value


def shuffle_lanes(concatenated: tuple, indices: tuple[int, ...]) -> tuple:
    return tuple(concatenated[i] for i in indices)


class Returned(BaseException):
    """`T.ret(value)` leaving the function from however deep in its loops and nested
    definitions: `execute` catches it and returns `value`. A BaseException, so that no
    `except Exception` of the machinery in between takes it for a fault."""

    def __init__(self, value: object):
        super().__init__(value)
        self.value = value


def return_value(value: object) -> None:
    raise Returned(value)


@cache
def base_namespace() -> dict[str, object]:
    names: dict[str, object] = {
        "__builtins__": __builtins__,
        "_f32": round_f32,
        "_f2i": arith.float_to_int,
        "_oob": out_of_bounds,
        "_fault": fault,
        "_view_of": view_of,
        "_allocate": allocate,
        "_fresh_copy": fresh_copy,
        "_dtype": parse_dtype,
        "_lane_offsets": lane_offsets,
        "_vector_load": vector_load,
        "_vector_store": vector_store,
        "_shuffle_lanes": shuffle_lanes,
        "_select": select,
        "_return": return_value,
        "_launch": threads.launch,
        "_shared_load": threads.shared_load,
        "_shared_store": threads.shared_store,
        "_shared_vector_load": threads.shared_vector_load,
        "_shared_vector_store": threads.shared_vector_store,
        "_write_results": threads.write_results,
    }
    for name in _INT_TYPES:
        names[f"_wrap_{name}"] = integer.wrapper(parse_dtype(name))
    for kind, narrow in NARROW.items():
        names[f"_round_{kind}"] = narrow.round
        names[f"_values_{kind}"] = narrow.values
        names[f"_encode_{kind}"] = narrow.encode
    return names
