"""NVRTC that imports but cannot load its library (cuda-python without nvidia-cuda-nvrtc) is
a diagnosed missing tool, not an internal error at the first call."""

from __future__ import annotations

import sys
import types

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver import cuda_toolchain


def _fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    def version() -> None:
        raise RuntimeError("Failure finding libnvrtc.so")

    nvrtc = types.ModuleType("cuda.bindings.nvrtc")
    nvrtc.nvrtcVersion = version  # type: ignore[attr-defined]
    bindings = types.ModuleType("cuda.bindings")
    bindings.nvrtc = nvrtc  # type: ignore[attr-defined]
    cuda = types.ModuleType("cuda")
    cuda.bindings = bindings  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", nvrtc)


def test_an_unloadable_nvrtc_is_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_cuda(monkeypatch)
    assert not cuda_toolchain.has_nvrtc()
    with pytest.raises(DiagnosticError) as caught:
        cuda_toolchain.ptx_from_cuda("__global__ void k() {}", "sm_90")
    message = str(caught.value)
    assert "libnvrtc cannot be loaded" in message and "Failure finding libnvrtc.so" in message
