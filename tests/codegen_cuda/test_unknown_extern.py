"""A function the program calls with `T.call_extern` that NVRTC or ptxas cannot find is the
program's error, located at the call; a tool rejecting tirc's own code is a tirc bug."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tirc.cli.main import main
from tirc.diagnostics import DiagnosticError, Source, Span
from tirc.driver.compile import compile_file
from tirc.driver.compile_cuda import extern_calls
from tirc.driver.cuda_toolchain import missing_functions, rejection
from tirc.driver.lower import lower_module
from tirc.text import parse

KERNEL = """\
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for i in range(1):
        with T.sblock("ext"):
            T.reads(A[0:64])
            T.writes(A[0:64])
            T.call_extern("void", "call_impl", A.data)
    for i in range(64):
        with T.sblock("exp"):
            vi = T.axis.spatial(64, i)
            A[vi] = T.call_pure_extern("float32", "__expf", A[vi])
"""
CALL = 'T.call_extern("void", "call_impl", A.data)'

NVRTC_LOG = """\
k.cu(14): error: identifier "call_impl" is undefined
      call_impl(A);
      ^

1 error detected in the compilation of "k.cu".
"""
PTXAS_LOG = "ptxas fatal   : Unresolved extern function 'call_impl'\n"


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    path = tmp_path / "k.tir"
    path.write_text(KERNEL)
    return path


def _located(error: DiagnosticError, path: Path) -> str:
    (diagnostic,) = error.diagnostics
    assert diagnostic.span is not None
    assert diagnostic.span.source.name == str(path)
    span = diagnostic.span
    assert span.source.text[span.start : span.end] == CALL
    return diagnostic.message + "\n" + "\n".join(note.message for note in diagnostic.notes)


def test_extern_calls_name_each_function_at_its_first_call(kernel: Path) -> None:
    lowered = lower_module(parse(KERNEL, name=str(kernel)), target="cuda")
    calls = extern_calls(lowered)
    assert sorted(calls) == ["__expf", "call_impl"]
    span = calls["call_impl"]
    assert span is not None and KERNEL[span.start : span.end] == CALL


def test_logs_name_the_missing_functions() -> None:
    assert missing_functions(NVRTC_LOG) == ["call_impl"]
    assert missing_functions(PTXAS_LOG + PTXAS_LOG) == ["call_impl"]
    assert missing_functions("error: expected a ';'") == []


def test_a_missing_extern_of_the_program_is_its_error() -> None:
    source = Source("k.tir", KERNEL)
    start = KERNEL.index(CALL)
    span = Span(source, start, start + len(CALL))
    (diagnostic,) = rejection(
        "NVRTC", "the generated CUDA C", NVRTC_LOG, {"call_impl": span}
    ).diagnostics
    assert diagnostic.span == span
    assert diagnostic.message == (
        "the program calls 'call_impl', which is not a CUDA built-in and is not defined in "
        "the program"
    )
    assert [note.message for note in diagnostic.notes][0] == (
        'NVRTC: k.cu(14): error: identifier "call_impl" is undefined'
    )
    (ptxas,) = rejection("ptxas", "the generated PTX", PTXAS_LOG, {"call_impl": span}).diagnostics
    assert ptxas.notes[0].message == "ptxas fatal   : Unresolved extern function 'call_impl'"


def test_a_function_the_program_does_not_call_is_a_tirc_bug() -> None:
    error = rejection("NVRTC", "the generated CUDA C", NVRTC_LOG, {"other": None})
    (diagnostic,) = error.diagnostics
    assert diagnostic.message == "NVRTC rejected the generated CUDA C (a tirc bug)"
    assert diagnostic.span is None and "call_impl" in diagnostic.notes[0].message
    assert "a tirc bug" in str(rejection("ptxas", "the generated PTX", "syntax error", {}))


def test_nvrtc_blames_the_call(kernel: Path, tmp_path: Path) -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python is not installed")
    out = tmp_path / "k.ptx"
    with pytest.raises(DiagnosticError) as error:
        compile_file(str(kernel), target="cuda", emit="ptx", output=str(out), ptx_via="nvrtc")
    text = _located(error.value, kernel)
    assert "'call_impl'" in text and 'identifier "call_impl" is undefined' in text
    assert "k.cu(" in text  # NVRTC's line numbers are those of `--emit cu`
    assert "a tirc bug" not in text and "__expf" not in text  # a CUDA built-in is fine
    assert not out.exists()


def test_ptxas_blames_the_call(kernel: Path, tmp_path: Path) -> None:
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    with pytest.raises(DiagnosticError) as error:
        compile_file(
            str(kernel), target="cuda", emit="cubin", output=str(tmp_path / "k"), ptx_via="llvm"
        )
    text = _located(error.value, kernel)
    assert "Unresolved extern function 'call_impl'" in text and "a tirc bug" not in text


def test_cuda_c_and_llvm_ptx_keep_the_call_for_the_user_to_link(
    kernel: Path, tmp_path: Path
) -> None:
    cu, ptx = tmp_path / "k.cu", tmp_path / "k.ptx"
    compile_file(str(kernel), target="cuda", emit="cu", output=str(cu))
    assert "call_impl(A);" in cu.read_text()
    compile_file(str(kernel), target="cuda", emit="ptx", output=str(ptx), ptx_via="llvm")
    assert ".extern .func call_impl" in ptx.read_text()


def test_the_command_line_exits_1_at_the_call(
    kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python is not installed")
    status = main(
        ["compile", str(kernel), "--target", "cuda", "--emit", "ptx", "-o", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert status == 1
    assert "error: the program calls 'call_impl'" in err
    assert f"--> {kernel}:7:13" in err
