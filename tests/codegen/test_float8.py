# ruff: noqa: E501 -- the programs are written one statement per line, as TVM prints them
"""float8 (e4m3fn, e5m2) on the CPU backend against the interpreter and ml_dtypes, bit for
bit: loads widen exactly, each operation computes in float32 and rounds to nearest even, past
the largest finite value e4m3fn gives NaN and e5m2 infinity (ml_dtypes' plain cast), a NaN
becomes the format's quiet NaN with its sign. Results that are NaN are compared as NaN (the
sign of a NaN made by arithmetic is the hardware's)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.codegen.helpers import bits_agree, parse_text, run_both_exactly
from tirc.codegen.header import header_text
from tirc.codegen.llvm import compile_module
from tirc.driver.lower import lower_module
from tirc.driver.run_cpu import jit_function
from tirc.driver.target import parse_target
from tirc.transform.passes.make_c_abi import MakeCAbi

KINDS = ["float8_e4m3fn", "float8_e5m2"]
NUMPY = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
MANTISSA_BITS = {"float8_e4m3fn": 3, "float8_e5m2": 2}


def float8_inputs(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """Values over the whole range of `kind`: random codes, NaNs included."""
    return rng.integers(0, 256, size=shape, dtype=np.uint8).view(NUMPY[kind])


def edge_float32(kind: str) -> np.ndarray:
    """float32 values at and around every rounding point of `kind`: for each sign, float32
    exponent and kept mantissa, the dropped bits zero, one, just below, at and just above
    half, and all ones; then NaNs with payloads, the infinities, the zeros and the extremes."""
    cut = 23 - MANTISSA_BITS[kind]
    half = 1 << (cut - 1)
    low = np.array([0, 1, half - 1, half, half + 1, (1 << cut) - 1], np.uint32)
    kept = np.arange(1 << (9 + MANTISSA_BITS[kind]), dtype=np.uint32) << np.uint32(cut)
    bits = (kept[:, None] | low[None, :]).ravel()
    special = np.array(
        [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA00000, 0x7F800000, 0xFF800000, 0, 0x80000000],
        np.uint32,
    )
    values = np.concatenate([bits, special]).view(np.float32)
    extremes = np.array([448, 464, 465, -465, 57344, 61439, 61440, 1e30], np.float32)
    return np.concatenate([values, extremes])


def elementwise(kind: str) -> str:
    return f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer((256,), "{kind}"), B: T.Buffer((256,), "{kind}"), W: T.Buffer((256,), "float32"), C: T.Buffer((256,), "{kind}"), D: T.Buffer((256,), "{kind}")):
    T.func_attr({{"tirx.noalias": True}})
    for io in range(16):
        for ii in T.vectorized(16):
            with T.sblock("C"):
                vi = T.axis.spatial(256, io * 16 + ii)
                C[vi] = A[vi] * B[vi] + A[vi] - T.{kind}(0.1) / B[vi]
                D[vi] = T.{kind}(W[vi]) + T.max(A[vi], B[vi])
    for i in range(256):
        with T.sblock("D"):
            vi = T.axis.spatial(256, i)
            D[vi] = D[vi] * T.{kind}(W[vi] * T.float32(3)) - T.min(A[vi], T.{kind}(2))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_elementwise_rounds_each_operation(kind: str) -> None:
    rng = np.random.default_rng(0)
    args = {
        "A": float8_inputs(rng, (256,), kind),
        "B": float8_inputs(rng, (256,), kind),
        "W": rng.standard_normal(256).astype(np.float32) * 8,
        "C": np.zeros(256, NUMPY[kind]),
        "D": np.zeros(256, NUMPY[kind]),
    }
    out = run_both_exactly(elementwise(kind), args)
    # one operation by hand: A * B rounded, plus A rounded, ... as ml_dtypes rounds float32
    f32 = {name: args[name].astype(np.float32) for name in "AB"}
    with np.errstate(all="ignore"):
        step = (f32["A"] * f32["B"]).astype(NUMPY[kind]).astype(np.float32)
        step = (step + f32["A"]).astype(NUMPY[kind]).astype(np.float32)
        tenth = np.float32(np.float32(0.1).astype(NUMPY[kind]))
        quotient = (tenth / f32["B"]).astype(NUMPY[kind]).astype(np.float32)
        want = (step - quotient).astype(NUMPY[kind])
    bits_agree(out["C"], want)


def casts(kind: str, other: str) -> str:
    """Casts into `kind` from every other float width and from integers, and back."""
    return f"""
@T.prim_func(s_tir=True)
def main(F: T.Buffer((512,), "float32"), H: T.Buffer((512,), "float16"), G: T.Buffer((512,), "float64"), I: T.Buffer((512,), "int32"), Q: T.Buffer((512,), "uint8"), X: T.Buffer((512,), "{kind}"), Y: T.Buffer((512,), "{kind}"), Z: T.Buffer((512,), "{kind}"), U: T.Buffer((512,), "{kind}"), V: T.Buffer((512,), "{kind}"), O: T.Buffer((512,), "{other}"), BF: T.Buffer((512,), "bfloat16"), R: T.Buffer((512,), "float32"), RH: T.Buffer((512,), "float16"), RI: T.Buffer((512,), "int32"), RB: T.Buffer((512,), "uint8"), RBF: T.Buffer((512,), "{kind}")):
    T.func_attr({{"tirx.noalias": True}})
    for io in range(32):
        for ii in T.vectorized(16):
            with T.sblock("to"):
                vi = T.axis.spatial(512, io * 16 + ii)
                X[vi] = T.Cast("{kind}", F[vi])
                Y[vi] = T.Cast("{kind}", H[vi])
                Z[vi] = T.Cast("{kind}", G[vi])
                U[vi] = T.Cast("{kind}", I[vi])
                V[vi] = T.Cast("{kind}", Q[vi])
                O[vi] = T.Cast("{other}", X[vi])
                BF[vi] = T.Cast("bfloat16", X[vi])
    for i in range(512):
        with T.sblock("from"):
            vi = T.axis.spatial(512, i)
            R[vi] = T.Cast("float32", X[vi])
            RH[vi] = T.Cast("float16", Y[vi])
            RI[vi] = T.Cast("int32", T.Cast("{kind}", T.Cast("float32", I[vi]) * T.float32(0.001)))
            RB[vi] = T.reinterpret("uint8", X[vi])
            RBF[vi] = T.reinterpret("{kind}", Q[vi])
"""


@pytest.mark.parametrize("kind", KINDS)
def test_casts_both_ways(kind: str) -> None:
    other = KINDS[1 - KINDS.index(kind)]
    rng = np.random.default_rng(1)
    edges = edge_float32(kind)
    floats = np.concatenate([edges[rng.permutation(len(edges))[:400]], edges[-16:]])
    floats = np.concatenate([floats, rng.standard_normal(512 - len(floats)).astype(np.float32)])
    integers = rng.integers(-70000, 70000, size=512, dtype=np.int32)
    integers[:8] = [0, 1, -1, 448, 449, 464, 465, 57344]
    names = ["X", "Y", "Z", "U", "V", "RBF"]
    with np.errstate(over="ignore", invalid="ignore"):
        halves = floats.astype(np.float16)
        wide = floats.astype(np.float64) * np.float64(1 + 2.0**-30)  # rounds to float32 first
    args = {
        "F": floats,
        "H": halves,  # past float16's range: infinity
        "G": wide,
        "I": integers,
        "Q": np.arange(512, dtype=np.uint16).astype(np.uint8),
        **{name: np.zeros(512, NUMPY[kind]) for name in names},
        "O": np.zeros(512, NUMPY[other]),
        "BF": np.zeros(512, ml_dtypes.bfloat16),
        "R": np.zeros(512, np.float32),
        "RH": np.zeros(512, np.float16),
        "RI": np.zeros(512, np.int32),
        "RB": np.zeros(512, np.uint8),
    }
    out = run_both_exactly(casts(kind, other), args)
    with np.errstate(all="ignore"):
        bits_agree(out["X"], floats.astype(NUMPY[kind]))
        bits_agree(out["U"], integers.astype(np.float32).astype(NUMPY[kind]))
    assert (out["RB"] == out["X"].view(np.uint8)).all()
    # the bits kept, except that a stored NaN is the format's quiet NaN (as in the interpreter)
    bits_agree(out["RBF"], args["Q"].view(NUMPY[kind]))


@pytest.mark.parametrize("kind", KINDS)
def test_edge_values_round_as_ml_dtypes(kind: str) -> None:
    """Every rounding point (ties to even both ways, subnormals, the largest value, overflow,
    NaN, -0) against ml_dtypes' cast, and every code widened to float32 bit for bit."""
    values = edge_float32(kind)
    count = len(values) + (-len(values)) % 16
    values = np.concatenate([values, np.zeros(count - len(values), np.float32)])
    text = f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({count},), "float32"), B: T.Buffer(({count},), "{kind}"), C: T.Buffer((256,), "{kind}"), D: T.Buffer((256,), "float32")):
    T.func_attr({{"tirx.noalias": True}})
    for io in range({count // 16}):
        for ii in T.vectorized(16):
            with T.sblock("B"):
                vi = T.axis.spatial({count}, io * 16 + ii)
                B[vi] = T.Cast("{kind}", A[vi])
    for i in range(256):
        with T.sblock("D"):
            vi = T.axis.spatial(256, i)
            D[vi] = T.Cast("float32", C[vi])
"""
    args = {
        "A": values,
        "B": np.zeros(count, NUMPY[kind]),
        "C": np.arange(256, dtype=np.uint8).view(NUMPY[kind]),
        "D": np.zeros(256, np.float32),
    }
    assert jit_function(parse_text(text), "main", "cpu")(args) == 0
    with np.errstate(all="ignore"):
        want = values.astype(NUMPY[kind])
        widened = args["C"].astype(np.float32)
    bad = np.nonzero(args["B"].view(np.uint8) != want.view(np.uint8))[0]
    assert not bad.size, [
        (hex(int(values.view(np.uint32)[i])), int(want.view(np.uint8)[i])) for i in bad[:5]
    ]
    assert (args["D"].view(np.uint32) == widened.view(np.uint32)).all()
    # the rules themselves: halfway past the largest value ties to even, which is the
    # overflow code (e4m3fn: NaN, having no infinities; e5m2: infinity); -0 keeps its sign
    code = dict(zip(values.tolist(), args["B"].view(np.uint8).tolist(), strict=False))
    if kind == "float8_e4m3fn":
        assert [code[v] for v in (448.0, 464.0, 465.0, -465.0)] == [0x7E, 0x7E, 0x7F, 0xFF]
    else:
        assert [code[v] for v in (57344.0, 61439.0, 61440.0)] == [0x7B, 0x7B, 0x7C]
    assert args["B"].view(np.uint8)[values.view(np.uint32) == 0x80000000][0] == 0x80


def reduction(kind: str) -> str:
    return f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64, 128), "{kind}"), B: T.Buffer((128,), "{kind}"), S: T.Buffer((64,), "float32"), M: T.Buffer((64,), "{kind}")):
    T.func_attr({{"tirx.noalias": True}})
    for i, k in T.grid(64, 128):
        with T.sblock("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + T.float32(A[vi, vk]) * T.float32(B[vk])
    for i, k in T.grid(64, 128):
        with T.sblock("M"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                M[vi] = T.{kind}(0)
            M[vi] = M[vi] + A[vi, vk] * T.{kind}(0.125)
"""


@pytest.mark.parametrize("kind", KINDS)
def test_reduction_accumulates_in_float32_and_in_float8(kind: str) -> None:
    rng = np.random.default_rng(2)
    scale = 4.0 if kind == "float8_e4m3fn" else 64.0
    args = {
        "A": (rng.standard_normal((64, 128)) * scale).astype(np.float32).astype(NUMPY[kind]),
        "B": (rng.standard_normal(128) * scale).astype(np.float32).astype(NUMPY[kind]),
        "S": np.zeros(64, np.float32),
        "M": np.zeros(64, NUMPY[kind]),
    }
    out = run_both_exactly(reduction(kind), args)
    want = args["A"].astype(np.float64) @ args["B"].astype(np.float64)
    np.testing.assert_allclose(out["S"], want, rtol=1e-5, atol=1e-3)


def test_header_passes_float8_buffers_as_bytes() -> None:
    text = header_text(MakeCAbi().run(parse_text(elementwise("float8_e5m2"))), "f8")
    assert (
        "int32_t main(uint8_t *TIRC_RESTRICT A, uint8_t *TIRC_RESTRICT B, float *TIRC_RESTRICT W,"
        in text
    )


def math_calls(kind: str) -> str:
    return f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "{kind}"), B: T.Buffer((64,), "{kind}"), C: T.Buffer((64,), "{kind}")):
    for i in range(64):
        with T.sblock("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = T.erf(A[vi])
            C[vi] = T.exp(A[vi]) + T.sqrt(T.fabs(A[vi]))
"""


@pytest.mark.parametrize("kind", [*KINDS, "bfloat16"])
def test_math_calls_compute_in_float32(kind: str) -> None:
    """A C math function (erf) is called in its float version on the float32 register (it
    was called as the double one, reading garbage); exp and sqrt as LLVM intrinsics."""
    numpy_type = NUMPY.get(kind, ml_dtypes.bfloat16)
    values = np.linspace(-3, 3, 64).astype(np.float32).astype(numpy_type)
    args = {"A": values, "B": np.zeros(64, numpy_type), "C": np.zeros(64, numpy_type)}
    out = run_both_exactly(math_calls(kind), args)
    assert np.abs(out["B"].astype(np.float32)).max() <= 1.0


MASKED = """
@T.prim_func
def main(A: T.Buffer((20,), "{kind}"), B: T.Buffer((20,), "{kind}")):
    T.func_attr({{"tirx.noalias": True}})
    for i in range(2):
        B.vstore([T.Ramp(i * 16, 1, 16)], A.vload([T.Ramp(i * 16, 1, 16)], predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(20, 16)) * T.Broadcast(T.{kind}(3.0), 16), predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(20, 16))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_masked_vector_access_of_bytes(kind: str) -> None:
    """A predicated float8 vector is a masked load and store of <16 x i8>: lanes past the end
    touch no memory."""
    text = MASKED.format(kind=kind)
    lowered = lower_module(parse_text(text), target="cpu")
    llvm_ir = compile_module(lowered, parse_target("cpu"), 0).llvm_ir()
    assert "@llvm.masked.load.v16i8.p0" in llvm_ir
    assert "@llvm.masked.store.v16i8.p0" in llvm_ir
    rng = np.random.default_rng(3)
    args = {"A": float8_inputs(rng, (20,), kind), "B": np.zeros(20, NUMPY[kind])}
    out = run_both_exactly(text, args)
    with np.errstate(all="ignore"):
        want = (args["A"].astype(np.float32) * 3).astype(NUMPY[kind])
    bits_agree(out["B"], want)
