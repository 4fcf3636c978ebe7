"""Region extents in the form the parser gives them, so that printed regions parse back.

A region prints as `A[min:min + extent]` and the parser computes its extent as the difference
`(min + extent) - min` with like terms collected, in the order written (as TVM's parser does).
A pass that builds or simplifies a region stores that same form (`hi + 1 - lo`, not
`hi - lo + 1`), or `parse(print(m))` would differ from `m`.
"""

from __future__ import annotations

import dataclasses

from tirc.ir import canonical
from tirc.ir import expr as E
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.structural import expr_key


def parsed_range(item: Range) -> Range:
    """`item` with its extent as the parser computes it from `min:min + extent`."""
    dtype = item.extent.dtype
    if item.min.dtype != dtype or not (dtype.is_scalar and dtype.is_integer):
        return item
    extent = canonical.difference(E.Add(item.min, item.extent), item.min, order="written")
    if expr_key(extent) == expr_key(item.extent):
        return item
    return dataclasses.replace(item, extent=extent)


def parsed_region(region: BufferRegion) -> BufferRegion:
    """`region` with every extent as the parser computes it."""
    ranges = tuple(parsed_range(item) for item in region.region)
    if all(new is old for new, old in zip(ranges, region.region, strict=True)):
        return region
    return dataclasses.replace(region, region=ranges)
