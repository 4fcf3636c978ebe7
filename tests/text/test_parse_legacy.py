"""Spellings of TVM before 0.22 mean what the 0.27 spelling means."""

from __future__ import annotations

from tests.text.parse_helpers import parse
from tirc.ir.structural import structural_equal

MODERN = """# from tvm.script import tirx as T
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    C = T.sblock_alloc_buffer((16,))
    for i, k in T.grid(16, 16):
        with T.sblock("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            T.reads(A[vi, vk])
            T.writes(C[vi])
            T.sblock_attr({"tag": 1})
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]
    for i in range(16):
        with T.sblock("copy"):
            vi = T.axis.spatial(16, i)
            T.reads(C[vi])
            T.writes(B[vi])
            B[vi] = C[vi]
"""


def legacy(text: str) -> str:
    return (
        text.replace("T.sblock_attr", "T.block_attr")
        .replace("T.sblock_alloc_buffer", "T.alloc_buffer")
        .replace("T.sblock(", "T.block(")
        .replace("@T.prim_func(s_tir=True)", "@T.prim_func")
    )


def test_block_spellings_and_implicit_s_tir() -> None:
    assert structural_equal(parse(MODERN), parse(legacy(MODERN)))


def test_tir_import_alias() -> None:
    text = legacy(MODERN).replace(
        "# from tvm.script import tirx as T", "from tvm.script import tir as T"
    )
    assert structural_equal(parse(MODERN), parse(text))


def test_tirx_import_is_accepted() -> None:
    text = MODERN.replace(
        "# from tvm.script import tirx as T", "from tvm.script import tirx as T\nimport tvm"
    )
    assert structural_equal(parse(MODERN), parse(text))


def test_other_import_aliases() -> None:
    text = MODERN.replace(
        "# from tvm.script import tirx as T", "from tvm.script import tirx as S"
    ).replace("T.", "S.")
    assert structural_equal(parse(MODERN), parse(text))


def test_modern_alloc_buffer_in_a_block_is_a_statement() -> None:
    # In TVM 0.27 T.alloc_buffer is an AllocBuffer statement, also inside a block.
    module = parse(
        '@T.prim_func(s_tir=True)\ndef main(A: T.Buffer((4,), "float32")):\n'
        '    with T.sblock("b"):\n        T.reads()\n        T.writes()\n'
        '        X = T.alloc_buffer((4,), scope="local")\n        X[0] = A[0]\n'
    )
    block = module.functions[0][1].body.block
    assert block.alloc_buffers == ()
    assert type(block.body.stmts[0]).__name__ == "AllocBuffer"
