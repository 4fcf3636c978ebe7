"""The IR of both dialects: immutable nodes, dtypes, the intrinsic registry, structural equality."""

from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range, make_buffer
from tirc.ir.dtype import DataType, DTypeError, parse_dtype
from tirc.ir.expr import *  # noqa: F403
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.node import IRError, Node
from tirc.ir.stmt import *  # noqa: F403
from tirc.ir.structural import find_difference, structural_equal, structural_hash
