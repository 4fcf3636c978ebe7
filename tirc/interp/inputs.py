"""Random arguments for a function: exact, small values, so that results rarely round.

Floats are k/8 with k in ±[1, 8] (as the conformance cases' inputs), integers lie in [0, 3],
bools are 0 or 1. An integer buffer the program divides by lies in [1, 4] instead (the same
draw plus one), so that a division or remainder reaches no zero divisor: one whose loads
appear in the divisor of `/`, `%`, `//`, `T.truncdiv`, `T.truncmod` (directly, through a
variable, a local copy or a view of the buffer). A divisor that can still be zero (`B[i] - 1`)
is the program's to guard, or the user's to give in --inputs. Shapes with variables need those
variables' values.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from tirc.analysis.arith import Analyzer
from tirc.diagnostics import DiagnosticError, Note
from tirc.interp.memory.storage import array_type
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.abi import parameter_buffers
from tirc.ir.buffer import Buffer, MatchBufferRegion
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import vars_in, walk
from tirc.ir.node import Node
from tirc.ir.substitute import substitute


def random_inputs(
    func: PrimFunc, seed: int = 0, *, sizes: Mapping[str, int] | None = None
) -> dict[str, np.ndarray | int]:
    """An argument for every parameter, keyed by parameter name; `sizes` gives shape variables
    (and scalar parameters) by name. Each parameter's values depend only on the seed and its
    position, so drawing some of them gives the same values as drawing all."""
    known = dict(sizes or {})
    return {
        param.name: random_argument(func, index, seed, known)
        for index, param in enumerate(func.params)
    }


def random_argument(
    func: PrimFunc, index: int, seed: int, known: Mapping[str, int]
) -> np.ndarray | int:
    param = func.params[index]
    buffer = parameter_buffers(func).get(param)  # make-c-abi's pointers have one too
    if buffer is None:
        if param.name not in known:
            raise DiagnosticError.at(param.span, f"give a value for scalar parameter {param.name}")
        return known[param.name]
    shape = tuple(shape_value(extent, known, buffer) for extent in buffer.shape)
    check_drawable(buffer, shape)
    nonzero = buffer.dtype.is_integer and buffer.data in divisor_data(func)
    try:
        return random_array(np.random.default_rng([seed, index]), shape, buffer.dtype, nonzero)
    except MemoryError:
        raise DiagnosticError.at(
            buffer.span, f"no memory for random values of {buffer.name} of shape {shape}"
        ) from None


# the most bytes of random values drawn for one buffer (drawing takes up to 24 bytes an
# element in temporaries, six times a float32 buffer); a larger argument is given, not drawn
MAX_RANDOM_BYTES = 1 << 28


def check_drawable(buffer: Buffer, shape: tuple[int, ...]) -> None:
    """A located error for a shape no array has (a negative extent) or one too large to
    draw at random (TVM's tests build buffers of 2**32 elements to test index types)."""
    if any(extent < 0 for extent in shape):
        raise DiagnosticError.at(
            buffer.span, f"{buffer.name} would have the negative shape {shape}"
        )
    size = int(np.prod(shape, dtype=object)) * max(buffer.dtype.bits // 8, 1) * buffer.dtype.lanes
    if size > MAX_RANDOM_BYTES:
        raise DiagnosticError.at(
            buffer.span,
            f"{buffer.name} of shape {shape} would be {_bytes(size)} of random input, more "
            f"than {_bytes(MAX_RANDOM_BYTES)}, the most random inputs draw for a buffer",
            Note("give smaller sizes, or the array itself in --inputs"),
        )


def _bytes(size: int) -> str:
    return f"{size / (1 << 30):.3g} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.3g} MiB"


def shape_value(extent: PrimExpr, known: Mapping[str, int], buffer: Buffer) -> int:
    """A dimension's size: a constant, or an expression of variables whose values are known
    (`n * 2`, `(n + 7) // 8`), evaluated."""
    value = evaluate_size(extent, known)
    if value is not None:
        return value
    missing = sorted({v.name for v in vars_in(extent) if v.name not in known})
    raise DiagnosticError.at(
        buffer.span,
        f"the shape of {buffer.name} depends on {', '.join(missing) or 'a value'}; "
        "give it as an input (or its size)",
    )


def evaluate_size(extent: PrimExpr, known: Mapping[str, int]) -> int | None:
    """The integer an expression of known variables (by name) comes to; None if it depends
    on an unknown one or does not simplify to a constant."""
    if isinstance(extent, IntImm):
        return extent.value
    if isinstance(extent, Var):
        return int(known[extent.name]) if extent.name in known else None
    free = vars_in(extent)
    if any(v.name not in known for v in free):
        return None
    values = {v: IntImm(int(known[v.name]), v.dtype) for v in free}
    value = Analyzer().simplify(substitute(extent, values))
    return value.value if isinstance(value, IntImm) else None


def random_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: DataType, nonzero: bool = False
) -> np.ndarray:
    """Values as the module docstring says; `nonzero` integers in [1, 4] (a divisor's)."""
    if dtype.lanes > 1:
        shape = (*shape, dtype.lanes)
    kind = array_type(dtype)
    values: np.ndarray
    if dtype.is_bool:
        values = rng.integers(0, 2, size=shape)
    elif dtype.is_integer:
        values = rng.integers(0, 4, size=shape) + (1 if nonzero else 0)
    else:
        values = rng.choice(np.array([-1, 1]), size=shape) * rng.integers(1, 9, size=shape) / 8.0
    return np.array(values, dtype=kind)  # an array even for shape ()


_DIVISIONS = (E.Div, E.Mod, E.FloorDiv, E.FloorMod)


@lru_cache(maxsize=16)
def divisor_data(func: PrimFunc) -> frozenset[Var]:
    """The data variables of the buffers whose loads appear in a divisor of `func`: in the
    right operand of a division or remainder, directly, through variables bound to
    expressions (`d = B[i]; A[i] // d`) or through the values stored to a buffer read there
    (a local copy, a cache); a view's (`T.match_buffer`, `T.decl_buffer(..., data=B.data)`)
    as its source's."""
    bound: dict[Var, PrimExpr] = {}
    stored: dict[Var, list[PrimExpr]] = {}
    views: dict[Var, Var] = {}
    divisors: list[PrimExpr] = []

    def collect(node: Node) -> None:
        if isinstance(node, (S.Bind, E.Let)):
            bound[node.var] = node.value
        elif isinstance(node, S.BufferStore):
            stored.setdefault(node.buffer.data, []).append(node.value)
        elif isinstance(node, _DIVISIONS):
            divisors.append(node.b)
        elif isinstance(node, MatchBufferRegion):
            views[node.buffer.data] = node.source.buffer.data
        elif isinstance(node, S.DeclBuffer) and isinstance(node.data, Var):
            views[node.buffer.data] = node.data

    walk(func.body, collect)
    found: set[Var] = set()
    seen: set[Var] = set()

    def loads(node: Node) -> None:
        if isinstance(node, E.BufferLoad) and node.buffer.data not in found:
            found.add(node.buffer.data)
            for value in stored.get(node.buffer.data, ()):
                walk(value, loads)
        elif isinstance(node, Var) and node in bound and node not in seen:
            seen.add(node)
            walk(bound[node], loads)

    for divisor in divisors:
        walk(divisor, loads)
    for data in list(found):
        while data in views and views[data] not in found:
            data = views[data]
            found.add(data)
    return frozenset(found)
