"""The lockstep model's fast paths give the thread model's results bit for bit: float32 held
natively (sums that round differently in float64, casts through float64, float32 -> int casts
at the type's edges), local memory laid out (elements, lanes) and turned into byte rows when
accessed with another item size, lane-uniform element accesses (views of a row, masked stores),
and bounds faults found by the one-pass check."""

from __future__ import annotations

import numpy as np
import pytest

from tests.interp.test_lockstep import _copy, check_source, uses_lockstep
from tirc.diagnostics import DiagnosticError
from tirc.interp import run
from tirc.text import parse

FLOAT32_SUMS = """
@T.prim_func
def main(A: T.Buffer((64, 16), "float32"), I: T.Buffer((64,), "int64"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32"), D: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    acc = T.alloc_buffer((2,), "float32", scope="local")
    acc[0] = T.float32(100000000.0)
    acc[1] = T.float32(0.0)
    for k in range(16):
        acc[0] = acc[0] + A[tx, k]
        acc[1] = acc[1] + A[tx, k] * A[tx, k] / T.float32(3.0)
    B[tx] = acc[0]
    C[tx] = acc[1] - T.Cast("float32", I[tx])
    D[tx] = T.Cast("float32", T.Cast("float64", acc[0]) + T.float64(0.25))
"""  # noqa: E501


def test_float32_sums_round_after_each_operation() -> None:
    a = np.ones((64, 16), np.float32)
    a[1::2] = np.float32(3.0)
    i = (np.int64(1) << 60) + (np.int64(1) << 36) + np.arange(64, dtype=np.int64)
    out = check_source(
        FLOAT32_SUMS,
        A=a,
        I=i,
        B=np.zeros(64, np.float32),
        C=np.zeros(64, np.float32),
        D=np.zeros(64, np.float32),
    )
    want = np.full(64, np.float32(1e8))
    for k in range(16):
        want = (want + a[:, k]).astype(np.float32)
    assert want[0] == np.float32(1e8)  # 1e8 + 1 rounds back to 1e8 in float32
    np.testing.assert_array_equal(out["B"], want)
    # int64 -> float32 rounds through float64, as the scalar interpreter does
    assert out["C"].dtype == np.float32
    squares = np.zeros(64, np.float32)
    for k in range(16):
        squares = (squares + (a[:, k] * a[:, k]) / np.float32(3)).astype(np.float32)
    np.testing.assert_array_equal(out["C"], squares - i.astype(np.float64).astype(np.float32))


TO_INT = """
@T.prim_func
def main(F: T.Buffer((4,), "float32"), K: T.Buffer((4,), "int32")):
    tx = T.launch_thread("threadIdx.x", 4)
    K[tx] = T.Cast("int32", F[tx])
"""


def test_float32_to_int_at_the_edges_of_the_range() -> None:
    f = np.array([-2147483648.0, 2147483520.0, -0.75, 3.5], np.float32)
    out = check_source(TO_INT, F=f, K=np.zeros(4, np.int32))
    assert out["K"].tolist() == [-2147483648, 2147483520, 0, 3]
    module = parse(TO_INT)
    args = {"F": np.array([0, 0, 2147483648.0, 0], np.float32), "K": np.zeros(4, np.int32)}
    messages = []
    for model in ("threads", "lockstep"):
        with pytest.raises(DiagnosticError) as caught:
            run(module["main"], _copy(args), module=module, gpu_model=model)
        messages.append(caught.value.diagnostics[0].message)
    assert "cast of 2147483648.0 to int32 is out of range" in messages[1]
    assert messages[0] == messages[1]


TWO_DTYPES = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((256,), "uint8"), C: T.Buffer((64,), "int32"), D: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    acc = T.alloc_buffer((4,), "float32", scope="local")
    acc[0] = A[tx]
    acc[1] = A[tx] * T.float32(2.0)
    bits = T.decl_buffer((4,), "int32", data=acc.data, scope="local")
    C[tx] = bits[tx % 2]
    raw = T.decl_buffer((16,), "uint8", data=acc.data, scope="local")
    raw[3] = T.uint8(64)
    B[tx * 4 + tx % 4] = raw[tx % 4]
    x: T.float32 = acc[0]
    acc[0] = T.float32(5.0)
    D[tx] = x + acc[0] + acc[1]
"""  # noqa: E501


def test_a_local_buffer_accessed_with_two_dtypes() -> None:
    a = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    out = check_source(
        TWO_DTYPES,
        A=a,
        B=np.zeros(256, np.uint8),
        C=np.zeros(64, np.int32),
        D=np.zeros(64, np.float32),
    )
    lanes = np.arange(64)
    pairs = np.stack([a, (a * np.float32(2)).astype(np.float32)], axis=1)
    np.testing.assert_array_equal(out["C"], pairs.view(np.int32)[lanes, lanes % 2])
    patched = a.copy().view(np.uint8).reshape(64, 4)
    patched[:, 3] = 64
    x = patched.reshape(-1).view(np.float32)
    want = (x + np.float32(5)).astype(np.float32) + pairs[:, 1]
    np.testing.assert_array_equal(out["D"], want.astype(np.float32))
    assert out["B"].reshape(64, 4)[lanes, lanes % 4].tolist() == [
        patched[t, t % 4] for t in range(64)
    ]


DIVERGENT_UNIFORM = """
@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 64)
    acc = T.alloc_buffer((3,), "float32", scope="local")
    S = T.alloc_buffer((4,), "float32", scope="shared")
    acc[1] = T.float32(-1.0)
    if tx < 4:
        S[tx] = A[bx * 64 + tx]
    T.tvm_storage_sync("shared")
    if tx % 3 == 0:
        acc[1] = A[bx * 64 + tx] + S[2]
        acc[2] = acc[1]
    else:
        acc[2] = S[bx + 1] * acc[1]
    B[bx * 64 + tx] = acc[1] + acc[2]
"""


def test_lane_uniform_elements_under_divergence_and_per_block_memory() -> None:
    a = np.random.default_rng(3).standard_normal(128).astype(np.float32)
    out = check_source(DIVERGENT_UNIFORM, A=a, B=np.zeros(128, np.float32))
    for lane in (0, 1, 64, 67):
        bx, tx = divmod(lane, 64)
        s = a[bx * 64 : bx * 64 + 4]
        if tx % 3 == 0:
            one = np.float32(a[lane] + s[2])
            want = one + one
        else:
            want = np.float32(-1) + np.float32(s[bx + 1] * np.float32(-1))
        assert out["B"][lane] == np.float32(want)


OUTSIDE = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    acc = T.alloc_buffer((4,), "float32", scope="local")
    for k in range(LIMIT):
        acc[k] = A[INDEX]
    B[tx] = acc[0]
"""


@pytest.mark.parametrize(
    ("limit", "index", "message"),
    [
        ("5", "tx", "out-of-bounds store to acc (shape (4,)): index 4 is outside [0, 4)"),
        ("1", "tx - 3", "out-of-bounds load from A (shape (64,)): index -3 is outside [0, 64)"),
        ("1", "tx * 2", "index 64 is outside [0, 64) in dimension 0 (in thread (32, 0, 0)"),
    ],
)
def test_bounds_faults_match_the_thread_model(limit: str, index: str, message: str) -> None:
    module = parse(OUTSIDE.replace("LIMIT", limit).replace("INDEX", index))
    assert uses_lockstep(module)
    args = {"A": np.zeros(64, np.float32), "B": np.zeros(64, np.float32)}
    messages = []
    for model in ("threads", "lockstep"):
        with pytest.raises(DiagnosticError) as caught:
            run(module["main"], _copy(args), module=module, gpu_model=model)
        messages.append(caught.value.diagnostics[0].message)
    assert message in messages[1]
    assert messages[0] == messages[1]


DIVISIONS = """
@T.prim_func
def main(A: T.Buffer((128,), "int32"), B: T.Buffer((512,), "int32"), C: T.Buffer((128,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((2,), "int32", scope="shared")
    x: T.int32 = A[bx * 64 + tx]
    S[1] = T.floordiv(A[bx * 64], 7) + 1
    T.tvm_storage_sync("shared")
    B[(bx * 64 + tx) * 4] = T.floordiv(x, 7) + S[1]
    B[(bx * 64 + tx) * 4 + 1] = T.floormod(x, 7)
    B[(bx * 64 + tx) * 4 + 2] = T.truncdiv(x, 5)
    B[(bx * 64 + tx) * 4 + 3] = T.truncmod(x, 5)
    if 0 < bx and tx < 32 or tx == 3:
        C[bx * 64 + tx] = T.Cast("float32", x) / T.float32(3.0)
"""  # noqa: E501


def test_division_by_constants_and_a_lane_uniform_store_to_shared_memory() -> None:
    a = np.random.default_rng(4).integers(-1000, 1000, 128).astype(np.int32)
    out = check_source(DIVISIONS, A=a, B=np.zeros(512, np.int32), C=np.zeros(128, np.float32))
    quads = out["B"].reshape(128, 4)
    first = np.repeat(a[[0, 64]] // 7 + 1, 64)
    assert quads[:, 0].tolist() == (a // 7 + first).tolist()
    assert quads[:, 1].tolist() == (a % 7).tolist()
    assert quads[:, 2].tolist() == np.trunc(a / 5).astype(np.int32).tolist()
    assert quads[:, 3].tolist() == np.fmod(a, 5).tolist()
    lanes = np.arange(128)
    written = ((lanes >= 64) & (lanes % 64 < 32)) | (lanes % 64 == 3)
    third = (a.astype(np.float64) / 3).astype(np.float32)
    np.testing.assert_array_equal(out["C"], np.where(written, third, 0).astype(np.float32))
