"""The CPU backend reads what the cpu pipeline leaves (tir-c-abi) and runs no pass itself: a
module that has not been lowered is refused with an error located in the program."""

from __future__ import annotations

import pytest

from tests.codegen.helpers import parse_text
from tirc.codegen.abi import ParamKind, function_abi
from tirc.codegen.llvm import compile_module
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.driver.target import parse_target
from tirc.transform.passes.make_c_abi import MakeCAbi

PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.sblock("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
"""


def test_an_unlowered_module_is_refused_where_it_is_not_lowered() -> None:
    with pytest.raises(DiagnosticError) as caught:
        compile_module(parse_text(PROGRAM), parse_target("cpu"), 0)
    (first, *_) = caught.value.diagnostics
    assert first.message.startswith("the CPU backend reads a module lowered for the CPU, but")
    assert first.span is not None and first.span.line > 1


def test_a_lowered_module_compiles() -> None:
    target = parse_target("cpu")
    lowered = lower_module(parse_text(PROGRAM), target=target, for_backend=True)
    assert "define" in compile_module(lowered, target, 0).llvm_ir()


def test_the_c_abi_is_read_after_make_c_abi_only() -> None:
    module = parse_text(PROGRAM)
    with pytest.raises(DiagnosticError, match="no C signature yet"):
        function_abi(module["main"])
    params = function_abi(MakeCAbi().run(module)["main"])
    assert [(p.name, p.kind) for p in params] == [("A", ParamKind.BUFFER), ("B", ParamKind.BUFFER)]
