"""tirc.ir.tma: the TMA swizzle against hand-computed cases of its definition (the 16-byte
chunk index within each 128-byte line XOR the line number modulo swizzle / 16), and the
operand checks of T.ptx_tma_load at the call."""

from __future__ import annotations

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.ir.tma import swizzled_byte, tensor_maps
from tirc.text import parse


@pytest.mark.parametrize(
    ("offset", "swizzle", "expected"),
    [
        (0, 128, 0),
        (16, 128, 16),  # line 0: unchanged
        (128, 128, 144),  # line 1, chunk 0 -> chunk 1
        (128 + 16, 128, 128),  # line 1, chunk 1 -> chunk 0
        (3 * 128 + 2 * 16 + 6, 128, 3 * 128 + 1 * 16 + 6),  # line 3, chunk 2 -> 1, byte 6 kept
        (7 * 128 + 7 * 16, 128, 7 * 128),  # line 7, chunk 7 -> 0
        (8 * 128 + 5 * 16, 128, 8 * 128 + 5 * 16),  # line 8 (the pattern repeats each 1 KiB)
        (128, 64, 144),  # 64 B: line 1 -> chunk XOR 1
        (2 * 128 + 2 * 16, 64, 2 * 128),  # line 2, chunk 2 -> 0
        (4 * 128 + 16, 64, 4 * 128 + 16),  # line 4: lines mod 4, unchanged
        (128, 32, 144),  # 32 B: line 1 -> chunk XOR 1
        (2 * 128 + 16, 32, 2 * 128 + 16),  # line 2: lines mod 2, unchanged
        (5 * 128 + 3 * 16, 0, 5 * 128 + 3 * 16),  # no swizzle
    ],
)
def test_swizzle_cases(offset: int, swizzle: int, expected: int) -> None:
    assert swizzled_byte(offset, swizzle) == expected


@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
def test_swizzle_permutes_chunks_within_each_line(swizzle: int) -> None:
    chunks = [swizzled_byte(chunk * 16, swizzle) for chunk in range(4096 // 16)]
    assert sorted(chunks) == list(range(0, 4096, 16))
    assert all(new // 128 == old * 16 // 128 for old, new in enumerate(chunks))


LOAD = """
@T.prim_func
def main(A: T.Buffer((64, 128), "float16")):
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_buffer((4096,), "float16", scope="shared")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    T.ptx_tma_load("float16", A.data, 2, SWIZZLE, 64, 128, 64, BOX, S.data, 0, bar.data, 0, 0, 0)
    T.ptx_tma_load("float16", A.data, 2, SWIZZLE, 64, 128, 64, BOX, S.data, 0, bar.data, 0, 0, 64)
"""


def test_one_map_per_tensor_box_and_swizzle() -> None:
    module = parse(LOAD.replace("SWIZZLE", "128").replace("BOX", "64"))
    (load,) = tensor_maps(module["main"].body)
    assert (load.rank, load.box, load.swizzle, load.box_bytes) == (2, (64, 64), 128, 8192)


@pytest.mark.parametrize(
    ("swizzle", "box", "message"),
    [
        ("128", "32", "with a 128-byte swizzle the box's rows must be 128 bytes, not 64"),
        ("48", "64", "swizzle 48 is not one of 0, 32, 64, 128"),
        ("0", "4", "the box's rows are 8 bytes, not a multiple of 16"),
        ("0", "512", "a box extent is 1 to 256 elements, not 512"),
    ],
)
def test_bad_loads_are_located(swizzle: str, box: str, message: str) -> None:
    module = parse(LOAD.replace("SWIZZLE", swizzle).replace("BOX", box))
    with pytest.raises(DiagnosticError) as error:
        tensor_maps(module["main"].body)
    diagnostic = error.value.diagnostics[0]
    assert message in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 7


def test_two_tensors_of_one_type_have_two_maps() -> None:
    text = """
@T.prim_func
def main(A: T.Buffer(("n", 64), "float16"), B: T.Buffer(("m", 64), "float16")):
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_buffer((4096,), "float16", scope="shared")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    n = T.int32()
    m = T.int32()
    T.ptx_tma_load("float16", A.data, 2, 0, n, 64, 64, 64, S.data, 0, bar.data, 0, 0, 0)
    T.ptx_tma_load("float16", B.data, 2, 0, m, 64, 64, 64, S.data, 0, bar.data, 0, 0, 0)
    T.ptx_tma_load("float16", A.data, 2, 0, n, 64, 64, 64, S.data, 0, bar.data, 0, 64, 0)
"""
    first, second = tensor_maps(parse(text)["main"].body)
    assert first.tensor is not second.tensor and first.shape[0] is not second.shape[0]
