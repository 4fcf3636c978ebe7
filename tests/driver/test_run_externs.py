"""`tirc run --target cpu` on a program that calls an extern function: one that nothing in the
process defines is a located error naming the call and the symbol, before the JIT's link
(which would name neither); `tirc compile` still writes the object, for the user to link. A
call of a function of the module by name runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tirc.cli.main import main
from tirc.diagnostics import DiagnosticError
from tirc.runtime.jit import check_externs_defined
from tirc.text import parse

UNKNOWN = """
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = T.call_extern("float32", "tirc_test_no_such_function", A[i])
        A[i] = T.call_pure_extern("float32", "sqrtf", A[i])
"""


def test_an_undefined_extern_is_located_and_named() -> None:
    with pytest.raises(DiagnosticError) as error:
        check_externs_defined(parse(UNKNOWN, name="k.tir"))
    (diagnostic,) = error.value.diagnostics  # sqrtf is libm's: defined
    assert "'tirc_test_no_such_function'" in diagnostic.message
    assert diagnostic.span is not None and (diagnostic.span.line, diagnostic.span.column) == (5, 16)


def test_run_refuses_it_and_compile_writes_the_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "k.tir"
    source.write_text(UNKNOWN)
    assert main(["run", str(source), "--target", "cpu"]) == 1
    err = capsys.readouterr().err
    assert f"{source}:5:16" in err, err
    assert "T.call_extern calls 'tirc_test_no_such_function', which nothing" in err
    assert "Traceback" not in err
    obj = tmp_path / "k.o"
    assert main(["compile", str(source), "-o", str(obj)]) == 0
    assert obj.stat().st_size > 0


def test_an_extern_call_of_a_function_of_the_module_runs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # split-host-device's form for a CPU "kernel": int32 arguments, int64_t parameters
    source = tmp_path / "host.tir"
    source.write_text(
        """
@I.ir_module
class Module:
    @T.prim_func
    def main_kernel(n: T.int32, A: T.handle("int32")) -> T.int32:
        A_1 = T.decl_buffer((4,), "int32", data=A)
        A_1[n] = n * 10
        return 0

    @T.prim_func
    def main(A: T.Buffer((4,), "int32"), n: T.int32):
        status: T.let[T.int32] = T.call_extern("int32", "main_kernel", n, A.data)
        assert status == 0, "the kernel failed"
"""
    )
    assert main(["run", str(source), "--target", "cpu", "--check", "--size", "n=2"]) == 0
    assert "check: the compiled code agrees with the interpreter" in capsys.readouterr().out


def test_only_the_functions_a_run_reaches_are_compiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # TVM's test_llvm_order_functions: each function calls an extern of its own
    source = tmp_path / "two.tir"
    source.write_text(
        """
@I.ir_module
class Module:
    @T.prim_func
    def calls_missing(A: T.Buffer((4,), "float32")):
        A[0] = T.call_extern("float32", "tirc_test_missing", A[1])

    @T.prim_func
    def main(A: T.Buffer((4,), "float32")):
        A[0] = T.call_extern("float32", "sqrtf", A[1] * A[1])
"""
    )
    assert main(["run", str(source), "--target", "cpu", "--check"]) == 0
    assert main(["run", str(source), "--func", "calls_missing", "--target", "cpu"]) == 1
    assert f"{source}:6:16" in capsys.readouterr().err
