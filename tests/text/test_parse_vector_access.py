"""`A.vload(indices, predicate=mask)` and `B.vstore(indices, value, predicate=mask)`: how the
printer writes predicated (masked) vector accesses, read back to the same IR."""

from __future__ import annotations

import pytest

from tests.text.parse_helpers import check_marked, parse_function
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.expr import LT, BufferLoad, Ramp
from tirc.ir.stmt import BufferStore, For
from tirc.ir.structural import find_difference
from tirc.text import parse, print_module

MASKED = """# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((20,), "float32"), B: T.Buffer((20,), "float32")):
        for i in range(2):
            B.vstore([T.Ramp(i * 16, 1, 16)], A.vload([T.Ramp(i * 16, 1, 16)], predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(20, 16)) * T.Broadcast(T.float32(2.0), 16), predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(20, 16))
"""  # noqa: E501
HEAD = '@T.prim_func\ndef main(A: T.Buffer((16,), "float32"), n: T.int32):\n'


def test_predicated_accesses_print_as_written() -> None:
    assert print_module(parse(MASKED)) == MASKED.rstrip("\n")


def test_predicated_accesses_build_masked_nodes() -> None:
    loop = parse(MASKED).functions[0][1].body
    assert isinstance(loop, For)
    store = loop.body
    assert isinstance(store, BufferStore)
    assert isinstance(store.indices[0], Ramp)
    assert isinstance(store.predicate, LT)
    assert store.predicate.dtype == dt.BOOL.with_lanes(16)
    load = store.value.a  # type: ignore[attr-defined]
    assert isinstance(load, BufferLoad)
    assert load.dtype == dt.FLOAT32.with_lanes(16)
    assert find_difference(load.predicate, store.predicate) is None


def test_parse_print_parse_is_the_same_module() -> None:
    module = parse(MASKED)
    assert find_difference(module, parse(print_module(module))) is None


def test_without_a_predicate_they_are_plain_accesses() -> None:
    func = parse_function(
        "    A.vstore([T.Ramp(0, 1, 4)], A.vload([T.Ramp(4, 1, 4)]))\n"
        "    A.vstore(8, A.vload(9) + T.float32(1.0))\n"
    )
    plain = parse_function("    A[0:4] = A[T.Ramp(4, 1, 4)]\n    A[8] = A[9] + T.float32(1.0)\n")
    assert find_difference(func.body, plain.body) is None


def test_a_scalar_access_takes_a_scalar_predicate() -> None:
    text = HEAD + "    A.vstore([0], A.vload([1], predicate=n > 0), predicate=n > 1)\n"
    module = parse(text)
    store = module.functions[0][1].body
    assert isinstance(store, BufferStore) and store.predicate is not None
    printed = print_module(module)
    assert "A.vstore([0], A.vload([1], predicate=n > 0), predicate=n > 1)" in printed
    assert find_difference(module, parse(printed)) is None


BAD = {
    "predicate of the wrong lanes": HEAD
    + "    A[0:4] = A.vload([T.Ramp(0, 1, 4)], predicate=T.Broadcast(T.bool(True), 8))"
    "  # error@51: the predicate of a vload from A must be bool or boolx4, not boolx8\n",
    "predicate that is not bool": HEAD
    + "    A.vstore([T.Ramp(0, 1, 4)], T.Broadcast(T.float32(0), 4), predicate=T.Ramp(0, 1, 4))"
    "  # error@73: the predicate of a vstore into A must be bool or boolx4, not int32x4\n",
    "predicate given by position": HEAD
    + "    A[0] = A.vload([0], n > 0)  # error@25: A.vload takes at most 1 positional argument\n",
    "missing value": HEAD
    + "    A.vstore([0])  # error@5: A.vstore is missing its argument 'value'\n",
    "too many indices": HEAD
    + "    A[0] = A.vload([0, 1])  # error@20: buffer A has 1 dimension but 2 indices given\n",
    "unknown keyword": HEAD
    + "    A[0] = A.vload([0], predicat=n > 0)  # error@34: did you mean 'predicate'?\n",
}


@pytest.mark.parametrize("text", list(BAD.values()), ids=list(BAD))
def test_bad_vector_accesses_are_located(text: str) -> None:
    check_marked(text)


def test_a_stored_slice_with_a_negative_step_is_a_descending_ramp() -> None:
    """A ramp of stride -2 prints as `A[a:a + -4:-2]` (as TVM prints it) and reads back as
    that ramp; a slice that runs against its step is located."""
    text = HEAD + "    A[n + 6:n + 6 + -4:-2] = T.Broadcast(T.float32(1), 2)\n"
    module = parse(text)
    store = module["main"].body
    assert isinstance(store, BufferStore)
    (index,) = store.indices
    assert isinstance(index, Ramp) and index.lanes == 2
    assert E.int_value(index.stride) == -2
    printed = print_module(module)
    assert "A[n + 6:n + 6 + -4:-2]" in printed
    assert find_difference(parse(printed), module) is None
    check_marked(HEAD + "    A[n:n - 3:2] = T.Broadcast(T.float32(1), 2)  # error@7: run the way\n")
