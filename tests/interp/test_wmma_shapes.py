"""wmma fragments of every shape in the interpreter: each shape x type x layout the CUDA C and
NVPTX backends compile (tests/codegen_cuda/test_nvptx_wmma.py's programs: m16n16k16, m32n8k16
and m8n32k16 on float16, bfloat16, int8 and uint8; m8n8k4 on float64) computes A x B in both
GPU models alike and as numpy does; an mma takes D's shape (analysis.wmma_fragments), and
fragments of different shapes, one fragment given two, or plain memory in an mma on
fragments are located errors."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tests.codegen_cuda.test_nvptx_wmma import COMBINATIONS, program
from tests.interp.test_lockstep import assert_same_in_both_models, uses_lockstep
from tirc.analysis.wmma_fragments import SHAPES
from tirc.diagnostics import DiagnosticError
from tirc.interp import run
from tirc.text import parse

ROOT = Path(__file__).resolve().parents[2]
ROW = "row_major"
NUMPY = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8,
    "uint8": np.uint8,
    "int32": np.int32,
    "float32": np.float32,
    "float64": np.float64,
}


def _tile(rows: int, cols: int, dtype: str, seed: int) -> np.ndarray:
    """Small integers, exact in every element type, so that any dtype's sum is exact."""
    low = 0 if dtype == "uint8" else -3
    values = np.random.default_rng(seed).integers(low, 4, (rows, cols))
    return values.astype(NUMPY[dtype])


def _flat(tile: np.ndarray, layout: str) -> np.ndarray:
    """A tile as memory holds it in this layout (a column-major tile is its transpose's rows)."""
    return (tile if layout == ROW else tile.T).ravel().copy()


def test_the_combinations_cover_every_shape_the_backends_take() -> None:
    taken = {(shape, ab) for shape, ab, *_ in COMBINATIONS}
    assert taken == {(shape, ab) for ab, shapes in SHAPES.items() for shape in shapes}


@pytest.mark.parametrize(
    ("shape", "ab", "acc", "a_layout", "b_layout", "c_layout"),
    COMBINATIONS,
    ids=lambda x: "x".join(map(str, x)) if isinstance(x, tuple) else str(x),
)
def test_every_shape_and_type_matches_numpy_in_both_models(
    shape: tuple[int, int, int], ab: str, acc: str, a_layout: str, b_layout: str, c_layout: str
) -> None:
    m, n, k = shape
    module = parse(program(shape, ab, acc, a_layout, b_layout, c_layout))
    assert uses_lockstep(module)
    a, b = _tile(m, k, ab, 1), _tile(k, n, ab, 2)
    inputs = {
        "A": _flat(a, a_layout),
        "B": _flat(b, b_layout),
        "C": np.full(m * n, 7, NUMPY[acc]),
    }
    out = assert_same_in_both_models(module, inputs)
    product = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(out["C"], _flat(product.astype(NUMPY[acc]), c_layout))


# fragment 1 of each buffer (m32n8k16): the offsets of a fragment are its shape's sizes
SECOND_FRAGMENT = """
@T.prim_func
def main(A: T.Buffer((512,), "float16"), B: T.Buffer((128,), "float16"), C: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    a = T.alloc_buffer((1024,), "float16", scope="wmma.matrix_a")
    b = T.alloc_buffer((256,), "float16", scope="wmma.matrix_b")
    c = T.alloc_buffer((512,), "float32", scope="wmma.accumulator")
    T.tvm_fill_fragment(c.data, 32, 8, 16, 0, T.float32(0.5))
    T.tvm_load_matrix_sync(a.data, 32, 8, 16, 1, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 512, 1), 16, "row_major")
    T.tvm_load_matrix_sync(b.data, 32, 8, 16, 1, T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 128, 1), 8, "row_major")
    T.tvm_mma_sync(c.data, 1, a.data, 1, b.data, 1, c.data, 0)
    T.tvm_store_matrix_sync(c.data, 32, 8, 16, 1, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 8, "row_major")
"""  # noqa: E501


def test_a_fragment_past_the_first_is_at_its_shapes_offset() -> None:
    a, b = _tile(32, 16, "float16", 3), _tile(16, 8, "float16", 4)
    inputs = {"A": a.ravel(), "B": b.ravel(), "C": np.zeros(256, np.float32)}
    out = assert_same_in_both_models(parse(SECOND_FRAGMENT), inputs)
    want = a.astype(np.float64) @ b.astype(np.float64) + 0.5
    np.testing.assert_array_equal(out["C"], want.astype(np.float32).ravel())


REFUSALS = [
    (  # B is m8n32k16 and D m32n8k16: one mma has one shape
        "b.data, 32, 8, 16, 1, T.tvm_access_ptr",
        "b.data, 8, 32, 16, 0, T.tvm_access_ptr",
        "T.tvm_mma_sync: B (b) is m8n32k16 and D (c) m32n8k16 (an mma's fragments have one shape)",
        11,
    ),
    (  # the store names c m16n16k16 after the fill made it m32n8k16
        "T.tvm_store_matrix_sync(c.data, 32, 8, 16",
        "T.tvm_store_matrix_sync(c.data, 16, 16, 16",
        "T.tvm_store_matrix_sync: m16n16k16 on fragment c, which an earlier call makes "
        "m32n8k16 (a fragment has one shape)",
        12,
    ),
    (  # plain memory as A of an mma on fragments: its elements are not a fragment's registers
        "T.tvm_mma_sync(c.data, 1, a.data, 1",
        "T.tvm_mma_sync(c.data, 1, A.data, 0",
        "T.tvm_mma_sync: A is not a wmma fragment, and the call's first operand is",
        11,
    ),
]

REFUSAL_IDS = ["mma", "fragment", "mixed"]


@pytest.mark.parametrize("model", ["threads", "lockstep"])
@pytest.mark.parametrize(("old", "new", "message", "line"), REFUSALS, ids=REFUSAL_IDS)
def test_fragments_that_disagree_are_refused_at_the_call(
    model: str, old: str, new: str, message: str, line: int
) -> None:
    assert old in SECOND_FRAGMENT
    module = parse(SECOND_FRAGMENT.replace(old, new))
    inputs = {"A": np.zeros(512, np.float16), "B": np.zeros(128, np.float16)}
    inputs["C"] = np.zeros(256, np.float32)
    with pytest.raises(DiagnosticError) as caught:
        run(module["main"], inputs, module=module, gpu_model=model)
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.message == message
    assert diagnostic.span is not None and diagnostic.span.line == line


# tvm_mma_sync on plain local arrays (no fragment): PLAIN_MMA_SHAPE, 16 x 16 x 16
PLAIN = """
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32"), C: T.Buffer((256,), "float32"), D: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    d = T.alloc_buffer((256,), "float32", scope="local")
    T.tvm_mma_sync(d.data, 0, A.data, 0, B.data, 0, C.data, 0)
    T.tvm_store_matrix_sync(d.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), D.data, 0, 256, 2), 16, "row_major")
"""  # noqa: E501


def test_an_mma_on_plain_memory_is_16_by_16_by_16() -> None:
    a, b = _tile(16, 16, "float32", 5), _tile(16, 16, "float32", 6)
    c = _tile(16, 16, "float32", 7)
    inputs = {"A": a.ravel(), "B": b.ravel(), "C": c.ravel(), "D": np.zeros(256, np.float32)}
    out = assert_same_in_both_models(parse(PLAIN), inputs)
    np.testing.assert_array_equal(out["D"], (a @ b + c).ravel())


def test_fragments_outside_a_kernel_take_their_shape_too() -> None:
    # the same warp program with no thread launch: the function's own fragments, m32n8k16
    text = program((32, 8, 16), "float16", "float32", ROW, ROW, ROW)
    launch = '    tx = T.launch_thread("threadIdx.x", 32)\n'
    assert launch in text
    module = parse(text.replace(launch, ""))
    a, b = _tile(32, 16, "float16", 8), _tile(16, 8, "float16", 9)
    inputs = {"A": a.ravel(), "B": b.ravel(), "C": np.zeros(256, np.float32)}
    run(module["main"], inputs, module=module)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(inputs["C"], want.astype(np.float32).ravel())


def test_a_tensorized_block_reads_its_fragments_shape_through_match_buffers() -> None:
    # s-tir: each wmma call names a match buffer of the fragment, a view its block declares
    module = parse((ROOT / "tests/schedule/golden/tensorize/wmma_matmul.after.tir").read_text())
    a, b = _tile(32, 32, "float16", 10), _tile(32, 32, "float16", 11)
    inputs = {"A": a, "B": b, "C": np.zeros((32, 32), np.float32)}
    run(module["main"], inputs, module=module)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(inputs["C"], want.astype(np.float32))
