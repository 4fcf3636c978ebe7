"""`tirc compile` through `tirc.driver.compile.compile_file`: every --emit kind, the header,
a snapshot of the LLVM IR for one small kernel, byte-identical output, the depfile, errors,
and a C program that links the object (samples/c_client)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.codegen.helpers import ROOT, SAMPLES
from tirc.diagnostics import DiagnosticError
from tirc.driver.compile import compile_file, depfile_path
from tirc.interp import run
from tirc.text import parse

MATMUL = str(SAMPLES / "matmul.tir")
PLAN = str(SAMPLES / "matmul.cpu.plan.json")
SNAPSHOT = Path(__file__).parent / "snapshots" / "elementwise.ll"
REGENERATE = os.environ.get("TIRC_REGENERATE") == "1"


def compile_to(tmp_path: Path, emit: str, name: str = "out", **options: object) -> bytes:
    (tmp_path / name).mkdir(exist_ok=True)
    out = tmp_path / name / f"kernel.{emit}"
    assert compile_file(MATMUL, plan=PLAN, emit=emit, output=str(out), **options) == 0  # type: ignore[arg-type]
    return out.read_bytes()


@pytest.mark.parametrize("emit", ["obj", "ll", "asm", "header"])
def test_same_input_same_bytes(tmp_path: Path, emit: str) -> None:
    assert compile_to(tmp_path, emit, "one") == compile_to(tmp_path, emit, "two")


def test_object_is_elf_with_the_exported_symbol(tmp_path: Path) -> None:
    data = compile_to(tmp_path, "obj", prefix="matmul_")
    assert data[:4] == b"\x7fELF"
    assert b"matmul_main" in data and b"GOMP_parallel" in data


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_shared_library_loads_and_runs(tmp_path: Path) -> None:
    import ctypes

    import numpy as np

    compile_to(tmp_path, "so", prefix="k_")
    ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
    library = ctypes.CDLL(str(tmp_path / "out" / "kernel.so"))
    a, b = (np.ones((128, 128), np.float32) for _ in range(2))
    c = np.zeros((128, 128), np.float32)
    from tirc.runtime.jit import aligned_array

    a, b, c = aligned_array(a), aligned_array(b), aligned_array(c)
    assert library.k_main(*(ctypes.c_void_p(x.ctypes.data) for x in (a, b, c))) == 0
    assert np.all(c == 128)


def test_header_declares_the_c_abi(tmp_path: Path) -> None:
    text = compile_to(tmp_path, "header", prefix="matmul_").decode()
    assert "#ifndef TIRC_KERNEL_H" in text and "#endif /* TIRC_KERNEL_H */" in text
    assert (
        "int32_t matmul_main(float *TIRC_RESTRICT A, float *TIRC_RESTRICT B, "
        "float *TIRC_RESTRICT C);" in text
    )
    assert "#include <stdint.h>" in text and 'extern "C"' in text


def test_header_passes_shape_variables_as_int64(tmp_path: Path) -> None:
    source = tmp_path / "vec.tir"
    source.write_text(
        "@T.prim_func\n"
        "def scale(a: T.handle, alpha: T.float32):\n"
        "    n = T.int64()\n"
        '    A = T.match_buffer(a, (n,), "int8")\n'
        "    for i in range(n):\n"
        "        A[i] = A[i] * T.int8(2)\n"
    )
    out = tmp_path / "vec.h"
    compile_file(str(source), emit="header", output=str(out))
    assert "int32_t scale(int8_t *TIRC_RESTRICT a, float alpha, int64_t n);" in out.read_text()


def test_llvm_ir_snapshot(tmp_path: Path) -> None:
    """Unoptimized IR for a fixed target, so that codegen changes show up in review."""
    out = tmp_path / "elementwise.ll"
    compile_file(
        str(SAMPLES / "elementwise.tir"),
        emit="ll",
        output=str(out),
        opt_level=0,
        target="cpu -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64",
    )
    text = out.read_text()
    if REGENERATE or not SNAPSHOT.exists():
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text(), "regenerate with TIRC_REGENERATE=1 if intended"


def test_depfile_lists_every_file_read(tmp_path: Path) -> None:
    out, dep = tmp_path / "k.o", tmp_path / "k.d"
    compile_file(MATMUL, plan=PLAN, output=str(out), depfile=str(dep))
    head, *rest = dep.read_text().split("\n")
    target, _, inputs = head.partition(": ")
    assert target == str(out)
    assert inputs.split() == [MATMUL, PLAN, str(ROOT / "tirc/transform/pipelines/cpu.toml")]
    assert f"{PLAN}:" in rest


def test_depfile_path_rules() -> None:
    assert depfile_path("k.o", "k.tir", "obj", md=True, mf=None) == "k.o.d"
    assert depfile_path(None, "dir/k.tir", "obj", md=True, mf=None) == "k.o.d"
    assert depfile_path("k.o", "k.tir", "obj", md=True, mf="x.d") == "x.d"
    assert depfile_path("k.o", "k.tir", "obj", md=False, mf=None) is None


def test_unknown_emit_kind(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError) as caught:
        compile_file(MATMUL, emit="exe", output=str(tmp_path / "x"))
    assert "unknown --emit kind 'exe'" in caught.value.diagnostics[0].message
    assert not (tmp_path / "x").exists()


def test_unknown_target(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError) as caught:
        compile_file(MATMUL, target="cpu -march=x", output=str(tmp_path / "x"))
    assert "unknown target option '-march=x'" in caught.value.diagnostics[0].message


def test_unknown_cpu_is_an_error_not_an_llvm_abort(tmp_path: Path) -> None:
    # LLVM only warns that it ignores the name, then aborts the process when it emits code
    with pytest.raises(DiagnosticError) as caught:
        compile_file(MATMUL, target="cpu -mcpu=foo", output=str(tmp_path / "x.o"))
    assert "unknown CPU 'foo'" in caught.value.diagnostics[0].message
    assert not (tmp_path / "x.o").exists()


def test_native_cpu_is_the_host(tmp_path: Path) -> None:
    compile_file(MATMUL, target="cpu -mcpu=native", output=str(tmp_path / "native.o"))
    compile_file(MATMUL, target="cpu", output=str(tmp_path / "host.o"))
    assert (tmp_path / "native.o").read_bytes() == (tmp_path / "host.o").read_bytes()


def test_missing_c_compiler_for_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-tirc")
    with pytest.raises(DiagnosticError) as caught:
        compile_file(MATMUL, emit="so", output=str(tmp_path / "k.so"))
    message = caught.value.diagnostics[0].message
    assert "cannot link a shared library" in message and "no-such-compiler-tirc" in message
    assert not (tmp_path / "k.so").exists()


# the whole gallery through make, a tirc process per kernel (minutes on a busy machine); the
# object, header, depfile and shared-library tests above and the gallery's differential tests
# cover its parts
@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("make") is None, reason="needs gcc and make"
)
def test_c_client_builds_runs_and_checks(tmp_path: Path) -> None:
    tirc = f"{sys.executable} {Path(__file__).parent / 'compile_command.py'}"
    done = subprocess.run(
        ["make", "-C", str(SAMPLES / "c_client"), f"BUILD={tmp_path}", f"TIRC={tirc}"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok: 128x128 matmul matches the naive loop" in done.stdout
    assert (tmp_path / "matmul.o.d").exists()


# TVM's test_llvm_lookup_intrin: llvm.ctpop given a count of operands as its first operand
WRONG_INTRINSIC_OPERANDS = """
@T.prim_func
def main(A: T.Buffer((1,), "uint8x8")):
    A[0] = T.call_llvm_pure_intrin("uint8x8", "llvm.ctpop", T.uint32(1), A[0])
"""


def test_an_llvm_intrinsic_llvm_rejects_is_a_located_error(tmp_path: Path) -> None:
    """The program's own call, not tirc's bug: it was an internal error (LLVM's verifier)."""
    path = tmp_path / "ctpop.tir"
    path.write_text(WRONG_INTRINSIC_OPERANDS)
    with pytest.raises(DiagnosticError) as caught:
        compile_file(str(path), emit="ll", output=str(tmp_path / "x.ll"))
    error = caught.value.diagnostics[0]
    assert error.message == (
        "LLVM rejects this call of llvm.ctpop: Intrinsic has incorrect argument type"
    )
    assert error.span is not None and error.span.line == 4
    assert error.notes[0].message == "its operands are (uint32, uint8x8) and its result uint8x8"
    # the interpreter refuses the same call, located, rather than failing inside ctpop
    with pytest.raises(DiagnosticError, match=r"llvm.ctpop takes one operand; this call gives 2"):
        run(parse(WRONG_INTRINSIC_OPERANDS)["main"], {"A": np.zeros((1, 8), np.uint8)})


@pytest.mark.parametrize("op", ["exp", "exp10", "sqrt", "log1p"])
def test_float_math_of_an_integer_is_a_located_error(tmp_path: Path, op: str) -> None:
    """TVM's test_roundtrip_exp10_of_literal: T.exp10(0) is an int32 call, which the CPU
    backend declared as llvm.exp10.i32, an internal error from LLVM's verifier."""
    path = tmp_path / "int_math.tir"
    path.write_text(f"@T.prim_func\ndef main():\n    T.evaluate(T.{op}(0))\n")
    with pytest.raises(DiagnosticError) as caught:
        compile_file(str(path), emit="ll", output=str(tmp_path / "x.ll"))
    error = caught.value.diagnostics[0]
    assert f"T.{op} of int32 values (it is float math)" in error.message
    assert error.span is not None and error.span.line == 3


def test_another_targets_intrinsic_is_a_located_error(tmp_path: Path) -> None:
    """TVM's AMD programs call llvm.amdgcn.sdot4: compiled for x86, LLVM's instruction
    selection aborted the process ("Cannot select"). Checked before any code is made."""
    path = tmp_path / "amdgcn.tir"
    path.write_text(
        '@T.prim_func\ndef main(A: T.Buffer((1,), "int32")):\n'
        '    A[0] = T.call_llvm_pure_intrin("int32", "llvm.amdgcn.sdot4", A[0], A[0], A[0], '
        "T.bool(False))\n"
    )
    with pytest.raises(DiagnosticError) as caught:
        compile_file(str(path), target="cpu -mtriple=x86_64-linux-gnu", emit="ll",
                     output=str(tmp_path / "x.ll"))  # fmt: skip
    error = caught.value.diagnostics[0]
    assert error.message == (
        "llvm.amdgcn.sdot4 is an intrinsic of amdgcn, which this target (x86_64) is not"
    )
    assert error.span is not None and error.span.line == 3


def test_an_avx512_intrinsic_for_a_cpu_without_it_is_a_located_error(tmp_path: Path) -> None:
    """TVM's VNNI programs compiled for a CPU without AVX-512: LLVM aborted the process."""
    path = tmp_path / "vnni.tir"
    path.write_text(
        '@T.prim_func\ndef main(C: T.Buffer((16,), "int32"), A: T.Buffer((16,), "int32")):\n'
        '    C[0:16] = T.call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.vpdpbusd.512", '
        "C[T.Ramp(0, 1, 16)], A[T.Ramp(0, 1, 16)], A[T.Ramp(0, 1, 16)])\n"
    )
    with pytest.raises(DiagnosticError) as caught:
        compile_file(str(path), target="cpu -mtriple=x86_64-linux-gnu -mcpu=haswell", emit="ll",
                     output=str(tmp_path / "x.ll"))  # fmt: skip
    error = caught.value.diagnostics[0]
    assert error.message == (
        "llvm.x86.avx512.vpdpbusd.512 needs AVX-512, which this target's CPU does not have"
    )
    assert error.span is not None and error.span.line == 3
