"""`tirc compile --target cuda` through the driver's one compile entry: outputs, paths, errors."""

from __future__ import annotations

import builtins
import shutil
from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES
from tirc.diagnostics import DiagnosticError
from tirc.driver.compile import compile_file
from tirc.driver.target import parse_target
from tirc.ir.target import DEFAULT_CUDA_ARCH

SOURCE = str(GPU_SAMPLES / "elementwise.tir")
PLAN = str(GPU_SAMPLES / "elementwise.plan.json")


def test_emit_cu(tmp_path: Path) -> None:
    out = tmp_path / "k.cu"
    assert compile_file(SOURCE, target="cuda", plan=PLAN, emit="cu", output=str(out)) == 0
    assert 'extern "C" __global__' in out.read_text()


@pytest.mark.parametrize("via", ["llvm", "nvrtc"])
def test_emit_ptx(tmp_path: Path, via: str) -> None:
    if via == "nvrtc":
        pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python is not installed")
    out = tmp_path / "k.ptx"
    compile_file(
        SOURCE, plan=PLAN, emit="ptx", output=str(out), ptx_via=via, target="cuda -arch=sm_80"
    )
    assert ".target sm_80" in out.read_text()


def test_emit_cubin(tmp_path: Path) -> None:
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    out = tmp_path / "k.cubin"
    compile_file(SOURCE, target="cuda", plan=PLAN, emit="cubin", output=str(out), ptx_via="llvm")
    assert out.read_bytes()[:4] == b"\x7fELF"


def test_cubin_without_ptxas_names_the_toolkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(DiagnosticError) as error:
        compile_file(
            SOURCE,
            target="cuda",
            plan=PLAN,
            emit="cubin",
            output=str(tmp_path / "k"),
            ptx_via="llvm",
        )
    assert "ptxas" in str(error.value)
    assert not (tmp_path / "k").exists()


def test_nvrtc_missing_names_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_cuda(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("cuda"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_cuda)
    with pytest.raises(DiagnosticError) as error:
        compile_file(
            SOURCE,
            target="cuda",
            plan=PLAN,
            emit="ptx",
            output=str(tmp_path / "k"),
            ptx_via="nvrtc",
        )
    rendered = str(error.value) + "".join(
        n.message for d in error.value.diagnostics for n in d.notes
    )
    assert "cuda-python" in rendered and "nvidia-cuda-nvrtc" in rendered


def test_target_arch() -> None:
    assert parse_target("cuda").arch == ""  # the device's when run
    assert parse_target("cuda -arch=sm_89").arch == "sm_89"
    assert parse_target("cuda").with_arch("sm_80").arch == "sm_80"  # --arch
    with pytest.raises(DiagnosticError):
        parse_target("cuda -arch=sm_42")
    with pytest.raises(DiagnosticError):
        compile_file(SOURCE, target="cuda", emit="exe", output="-")


def test_default_arch(tmp_path: Path) -> None:
    out = tmp_path / "k.ptx"
    compile_file(SOURCE, target="cuda", plan=PLAN, emit="ptx", output=str(out), ptx_via="llvm")
    assert f".target {DEFAULT_CUDA_ARCH}" in out.read_text()
