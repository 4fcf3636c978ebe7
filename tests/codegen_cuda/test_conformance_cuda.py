"""Every GPU conformance case (meta.json targets "gpu"): TVM's scheduled module lowers for cuda,
its CUDA C compiles with nvcc, and its PTX (LLVM always, and NVRTC's where installed)
assembles with ptxas, for sm_90. Slow: nvcc takes seconds per case.

Known failures say why; each case reports which stage failed first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts, require_tool
from tests.sweep import case_marks
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.compile_cuda import module_ptx, ptx_path
from tirc.driver.lower import lower_module
from tirc.ir.function import IRModule
from tirc.text import parse

CASES_DIR = Path(__file__).parents[3] / "shared" / "conformance" / "cases"
CASES = sorted(
    path.parent
    for path in CASES_DIR.glob("*/meta.json")
    if json.loads(path.read_text()).get("targets") == "gpu"
    and (path.parent / "expected.tir").exists()
)
# case -> why it cannot pass (not tirc's doing)
KNOWN_FAILURES = {
    "test_tir_schedule_cache_read_write__test_inplace_cache_read__0": (
        "calls an extern function 'call_impl' that nothing defines"
    ),
}
# case -> the located error tirc refuses it with: the program cannot run as written on any GPU
REFUSED = {
    "test_meta_schedule_trace_apply__test_conv2d_int8_tensorcore__0": (
        "which the 32 threads of a warp perform together, but its blocks have 16 threads"
    ),
    "test_meta_schedule_trace_apply__test_conv2d_int8_tensorcore__1": (
        "which the 32 threads of a warp perform together, but its blocks have 16 threads"
    ),
}
pytestmark = pytest.mark.slow


def lowered(case: Path) -> IRModule:
    return lower_module(parse((case / "expected.tir").read_text(), name=str(case)), target="cuda")


@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case.name, marks=case_marks(case.name)) for case in CASES]
)
def test_case_builds(case: Path, tmp_path: Path) -> None:
    """Lowered once (the costly part: up to 15 s for the Winograd cases), then: the CUDA C
    compiles with nvcc; the LLVM PTX assembles; and where cuda-python has NVRTC, its PTX too
    (without it the default path is LLVM, already checked). A refused case is refused with
    its message; the first stage that fails is named."""
    require_tool("nvcc")
    require_tool("ptxas")
    reason = KNOWN_FAILURES.get(case.name)
    if reason is not None:
        pytest.xfail(reason)
    module = lowered(case)
    message = REFUSED.get(case.name)
    if message is not None:
        with pytest.raises(DiagnosticError) as caught:
            emit_cuda(module)
        assert message in str(caught.value)
        return
    complaint = nvcc_accepts(emit_cuda(module), tmp_path)
    assert not complaint, "nvcc: " + complaint[:2000]
    complaint = ptxas_accepts(emit_ptx(module, arch="sm_90"), tmp_path)
    assert not complaint, "ptxas on the LLVM PTX: " + complaint[:2000]
    if ptx_path(None) == "nvrtc":
        complaint = ptxas_accepts(module_ptx(module, arch="sm_90", via="nvrtc"), tmp_path)
        assert not complaint, "ptxas on NVRTC's PTX: " + complaint[:2000]
