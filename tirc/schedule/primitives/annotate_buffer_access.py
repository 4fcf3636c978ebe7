"""annotate_buffer_access: state the region a block reads or writes of a buffer explicitly,
as `lambda iterators: (begin0, end0, begin1, end1, ...)`, replacing the inferred region; the
block is marked (`explicit_read_region` / `explicit_write_region`) so that it is kept.

    T.reads(A[vi, vj])    →    T.reads(A[vi - 1:vi - 1 + 2, vj - 1:vj - 1 + 2])
                               T.sblock_attr({"explicit_read_region": [0]})
"""

from __future__ import annotations

import dataclasses

from tirc.analysis.arith import Analyzer
from tirc.diagnostics import DiagnosticError
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.dtype import DataType
from tirc.ir.stmt import SBlock
from tirc.schedule.buffer_access import AccessKind, access_kind, nth_buffer
from tirc.schedule.errors import ScheduleError
from tirc.schedule.index_map import IndexMapError, parse_index_map
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule
from tirc.schedule.signature import Kind, Param, Signature
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "annotate_buffer_access",
        "AnnotateBufferAccess",
        inputs=(
            Param("block", Kind.BLOCK),
            Param("buffer_index", Kind.INT),
            Param("buffer_index_type", Kind.VALUE),
            Param("index_map", Kind.INDEX_MAP),
        ),
        doc="Set a block's read or write region of a buffer from (begin, end) pairs.",
    )
)
def annotate_buffer_access(
    sch: Schedule, block: SRef, buffer_index: int, buffer_index_type: object, index_map: str
) -> None:
    state = sch.state_owning(block)
    kind = access_kind(buffer_index_type, block)
    buffer = nth_buffer(block, buffer_index, kind)
    node = block.block
    try:
        mapping = parse_index_map(index_map, dtype_hint=_iter_dtype(node))
        bounds = mapping.map([iv.var for iv in node.iter_vars], Analyzer())
    except DiagnosticError as error:
        raise ScheduleError(f"the region map is not an index map: {error}", block) from None
    except IndexMapError as error:
        raise ScheduleError(f"the region map does not fit {block}: {error}", block) from None
    if len(bounds) != 2 * buffer.ndim:
        raise ScheduleError(
            f"the region map gives {len(bounds)} values, but the buffer {buffer.name} needs "
            f"a (begin, end) pair for each of its {buffer.ndim} dimensions",
            block,
        )
    analyzer = Analyzer()
    ranges = tuple(
        Range(bounds[i], analyzer.simplify(arithmetic("-", bounds[i + 1], bounds[i])))
        for i in range(0, len(bounds), 2)
    )
    region = BufferRegion(buffer, ranges)
    reading = kind is AccessKind.READ
    regions = list(node.reads if reading else node.writes)
    regions[buffer_index] = region
    key = "explicit_read_region" if reading else "explicit_write_region"
    marked = node.annotations.get(key, ())
    if not isinstance(marked, tuple):
        marked = ()
    if buffer_index not in marked:
        marked = marked + (buffer_index,)
    annotations = node.annotations.set(key, marked)
    if reading:
        new = dataclasses.replace(node, annotations=annotations, reads=tuple(regions))
    else:
        new = dataclasses.replace(node, annotations=annotations, writes=tuple(regions))
    state.replace(block, new, {node: new})


def _iter_dtype(node: SBlock) -> DataType | None:
    for iter_var in node.iter_vars:
        return iter_var.var.dtype
    return None
