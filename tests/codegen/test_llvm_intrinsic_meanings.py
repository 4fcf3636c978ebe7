"""LLVM intrinsics by name that the interpreter defines (ctpop on each lane width, x86's
pmaddubsw and pmaddwd, assume): the compiled code and the interpreter agree on the values
that reach their edges (negative lanes, saturation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.codegen.helpers import parse_text, run_both
from tirc.cli.main import main
from tirc.diagnostics import DiagnosticError
from tirc.interp import run

POPCOUNT = """
@T.prim_func
def main(A: T.Buffer((16,), "int8"), B: T.Buffer((16,), "int8"),
         C: T.Buffer((16,), "uint16"), D: T.Buffer((16,), "uint16")):
    for i in range(16):
        T.call_llvm_intrin("void", "llvm.assume", A[i] == A[i])
        B[i] = T.call_llvm_pure_intrin("int8", "llvm.ctpop", A[i])
    for i in range(4):
        D[T.Ramp(i * 4, 1, 4)] = T.call_llvm_pure_intrin(
            "uint16x4", "llvm.ctpop", C[T.Ramp(i * 4, 1, 4)]
        )
"""


def test_ctpop_counts_the_bits_of_each_lane_width() -> None:
    a = np.array([0, 1, -1, -128, 127, 85, -86, 3] * 2, np.int8)
    c = np.array([0, 1, 0xFFFF, 0x8000] * 4, np.uint16)
    out = run_both(
        parse_text(POPCOUNT), {"A": a, "B": np.zeros(16, np.int8), "C": c, "D": np.zeros_like(c)}
    )
    np.testing.assert_array_equal(out["B"][:8], [0, 1, 8, 1, 7, 4, 4, 2])
    np.testing.assert_array_equal(out["D"][:4], [0, 1, 16, 1])


MULTIPLY_ADD = """
@T.prim_func
def main(A: T.Buffer((32,), "uint8"), B: T.Buffer((32,), "int8"),
         C: T.Buffer((16,), "int16"), D: T.Buffer((16,), "int16"), E: T.Buffer((8,), "int32")):
    C[T.Ramp(0, 1, 16)] = T.call_llvm_pure_intrin(
        "int16x16", "llvm.x86.avx2.pmadd.ub.sw", A[T.Ramp(0, 1, 32)], B[T.Ramp(0, 1, 32)]
    )
    E[T.Ramp(0, 1, 8)] = T.call_llvm_pure_intrin(
        "int32x8", "llvm.x86.avx2.pmadd.wd", C[T.Ramp(0, 1, 16)], D[T.Ramp(0, 1, 16)]
    )
"""


def test_x86_multiply_adds_saturate_and_wrap_as_the_cpu_does() -> None:
    a = np.array([255, 255, 0, 1] * 8, np.uint8)
    b = np.array([127, 127, -128, -128, 1, 2, -1, -2] * 4, np.int8)
    d = np.array([-32768, -32768, 2, 3] * 4, np.int16)
    args = {"A": a, "B": b, "C": np.zeros(16, np.int16), "D": d, "E": np.zeros(8, np.int32)}
    out = run_both(parse_text(MULTIPLY_ADD), args)
    assert out["C"][0] == 32767 and out["C"][1] == -128  # 255*127*2 saturates; 0 + 1*-128


def test_an_unknown_llvm_intrinsic_is_a_located_error() -> None:
    module = parse_text(
        """
@T.prim_func
def main(A: T.Buffer((4,), "int32")):
    A[0] = T.call_llvm_pure_intrin("int32", "llvm.tirc.no.such", A[1])
"""
    )
    with pytest.raises(DiagnosticError, match="no implementation of the LLVM intrinsic") as error:
        run(module["main"], {"A": np.zeros(4, np.int32)})
    assert error.value.diagnostics[0].span is not None
    assert error.value.diagnostics[0].span.line == 4


def test_run_check_with_an_unknown_intrinsic_exits_1_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "k.tir"
    source.write_text(POPCOUNT.replace('"llvm.ctpop", A[i]', '"llvm.tirc.no.such", A[i]'))
    assert main(["run", str(source), "--target", "interp"]) == 1
    err = capsys.readouterr().err
    assert f"{source}:7:16" in err and "llvm.tirc.no.such" in err, err
    assert "Traceback" not in err
    source.write_text(POPCOUNT)
    assert main(["run", str(source), "--target", "cpu", "--check"]) == 0
