"""Every GPU conformance case (meta.json targets "gpu"): TVM's scheduled module lowers for cuda,
its CUDA C compiles with nvcc, and its PTX (NVRTC where installed, else LLVM; and LLVM always)
assembles with ptxas, for sm_90. Slow: nvcc takes seconds per case.

Known failures say why; each case reports which stage failed first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts, require_tool
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.compile_cuda import module_ptx
from tirc.driver.lower import lower_module
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
# cases the LLVM path declines: tensor-core fragments and the wmma calls need NVRTC
LLVM_DECLINES = ("tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_mma_sync", "wmma.")

pytestmark = pytest.mark.slow


def lowered(case: Path):  # type: ignore[no-untyped-def]
    return lower_module(parse((case / "expected.tir").read_text(), name=str(case)), target="cuda")


def _known(case: Path) -> bool:
    """Whether the case is one tirc refuses (and does so, with its message)."""
    reason = KNOWN_FAILURES.get(case.name)
    if reason is not None:
        pytest.xfail(reason)
    message = REFUSED.get(case.name)
    if message is None:
        return False
    with pytest.raises(DiagnosticError) as caught:
        emit_cuda(lowered(case))
    assert message in str(caught.value)
    return True


@pytest.mark.parametrize("case", CASES, ids=lambda path: path.name)
def test_cuda_c_compiles(case: Path, tmp_path: Path) -> None:
    require_tool("nvcc")
    if _known(case):
        return
    complaint = nvcc_accepts(emit_cuda(lowered(case)), tmp_path)
    assert not complaint, complaint[:2000]


@pytest.mark.parametrize("case", CASES, ids=lambda path: path.name)
def test_ptx_assembles(case: Path, tmp_path: Path) -> None:
    require_tool("ptxas")
    if _known(case):
        return
    try:
        ptx = module_ptx(lowered(case), arch="sm_90", via=None)
    except DiagnosticError as error:
        # without cuda-python the default path is LLVM, which declines tensor-core code
        text = (case / "expected.tir").read_text()
        if any(word in text for word in LLVM_DECLINES) and "nvrtc" in str(error):
            pytest.skip("tensor-core code needs NVRTC (pip install '.[cuda]')")
        raise
    complaint = ptxas_accepts(ptx, tmp_path)
    assert not complaint, complaint[:2000]


@pytest.mark.parametrize("case", CASES, ids=lambda path: path.name)
def test_llvm_ptx_assembles(case: Path, tmp_path: Path) -> None:
    require_tool("ptxas")
    if _known(case):
        return
    text = (case / "expected.tir").read_text()
    try:
        ptx = emit_ptx(lowered(case), arch="sm_90")
    except DiagnosticError as error:
        if any(word in text for word in LLVM_DECLINES) and "nvrtc" in str(error):
            pytest.skip("tensor-core code needs --ptx-via nvrtc")
        raise
    complaint = ptxas_accepts(ptx, tmp_path)
    assert not complaint, complaint[:2000]
