"""legalize-vector-width: after it and vectorize-loop no load or store moves more than
`max_bytes`, and the program computes what it did (the goldens cover the exact rewrites)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.transform.helpers import run_passes, widest_access
from tirc import interp
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import make_buffer
from tirc.ir.function import IRModule, PrimFunc
from tirc.text import parse

PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((S,), "{narrow}"), B: T.Buffer((S,), "{wide}"), C: T.Buffer((S,), "{narrow}")):
    for i in range(2):
        for v in T.vectorized(L):
            B[i * L + v] = B[i * L + v] + T.Cast("{wide}", A[i * L + v])
            C[i * L + v] = T.Select(A[i * L + v] > C[i * L + v], A[i * L + v], C[i * L + v])
"""


def program(narrow: str, wide: str, lanes: int) -> IRModule:
    text = f"L = {lanes}\nS = {2 * lanes}\n" + PROGRAM.format(narrow=narrow, wide=wide)
    return parse(text)


def outputs(module: IRModule) -> dict[str, object]:
    func = module["main"]
    args = interp.random_inputs(func, 5)
    interp.run(func, args, module=module)
    return args


@pytest.mark.parametrize(
    ("narrow", "wide"),
    [("float16", "float32"), ("int8", "int32"), ("float32", "float64"), ("int64", "int64")],
)
@pytest.mark.parametrize("lanes", [3, 8, 12, 32, 128])
def test_vectorized_loops_compute_the_same_in_native_chunks(
    narrow: str, wide: str, lanes: int
) -> None:
    module = program(narrow, wide, lanes)
    lowered = run_passes(module, "legalize-vector-width{max_bytes=16},vectorize-loop")
    assert widest_access(lowered) <= 16
    want, have = outputs(module), outputs(lowered)
    for name in ("B", "C"):
        np.testing.assert_array_equal(have[name], want[name], err_msg=name)


def test_a_wider_target_keeps_wider_vectors() -> None:
    module = program("float32", "float32", 16)  # 64 bytes: one AVX-512 register
    assert run_passes(module, "legalize-vector-width{max_bytes=64}") is module
    lowered = run_passes(module, "legalize-vector-width{max_bytes=64},vectorize-loop")
    assert widest_access(lowered) == 64


def test_explicit_wide_vectors_are_split_too() -> None:
    """Vectors written in tir (no vectorized loop): a wide Bind becomes a local buffer, a
    vector Let is taken chunk by chunk."""
    lanes = 128
    wide = dt.parse_dtype("float16").with_lanes(lanes)
    a = make_buffer("A", (E.IntImm(lanes),), dt.parse_dtype("float16"))
    b = make_buffer("B", (E.IntImm(lanes),), dt.parse_dtype("float16"))
    x, y = E.Var("x", wide), E.Var("y", wide)
    ramp = E.Ramp(E.IntImm(0), E.IntImm(1), lanes)
    body = S.SeqStmt(
        (
            S.Bind(
                x, E.Mul(E.BufferLoad(a, (ramp,)), E.Broadcast(E.FloatImm(2.0, a.dtype), lanes))
            ),
            S.BufferStore(b, E.Let(y, E.Add(x, E.BufferLoad(b, (ramp,))), E.Add(y, y)), (ramp,)),
        )
    )
    params = (E.Var("A", dt.HANDLE), E.Var("B", dt.HANDLE))
    func = PrimFunc(params, ((params[0], a), (params[1], b)), body, is_s_tir=True)
    module = IRModule((("main", func),))
    lowered = run_passes(module, "legalize-vector-width")
    assert widest_access(lowered) <= 16
    want, have = outputs(module), outputs(lowered)
    np.testing.assert_array_equal(have["B"], want["B"])
