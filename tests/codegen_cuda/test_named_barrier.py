"""Named barriers in both CUDA backends (tirc.ir.named_barrier): CUDA C's inline
`bar.sync` / `bar.arrive` and NVPTX's convergent barrier intrinsics become the same PTX
instructions, constant or computed ids alike, which ptxas assembles on sm_80 and sm_90a;
a bad id or count is a located error from either backend."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import ptxas_accepts, require_tool
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_nvvm_ir, emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda
from tirc.driver.lower import lower_module
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import Mutator
from tirc.text import parse

# producers (threads 128..255) store and arrive; consumers sync and read; then each warpgroup
# syncs on a barrier of its own (2 and 3: a computed id)
KERNEL = """
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    bx = T.launch_thread("blockIdx.x", 1)
    tx = T.launch_thread("threadIdx.x", 256)
    S = T.alloc_buffer((256,), "float32", scope="shared")
    if tx >= 128:
        S[tx - 128] = A[tx - 128]
        T.ptx_bar_arrive(1, 256)
    else:
        T.ptx_bar_sync(1, 256)
        B[tx] = S[127 - tx]
    T.ptx_bar_sync(tx // 128 + 2, 128)
"""
# the three barriers, in order, as PTX
INSTRUCTIONS = [("bar.arrive", "1, 256"), ("bar.sync", "1, 256"), ("bar.sync", "%r")]


def _lowered(text: str = KERNEL) -> IRModule:
    return lower_module(parse(text), target="cuda")


def ptx_of_cuda(source: str, arch: str, directory: Path) -> str:
    """The PTX of CUDA C, from NVRTC where it is installed, else nvcc."""
    if has_nvrtc():
        return ptx_from_cuda(source, arch)
    nvcc = require_tool("nvcc")
    cu, out = directory / "kernel.cu", directory / "kernel.ptx"
    cu.write_text(source)
    subprocess.run([nvcc, f"-arch={arch}", "-ptx", str(cu), "-o", str(out)], check=True)
    return out.read_text()


def _barriers(ptx: str) -> list[tuple[str, str]]:
    found = []
    for line in ptx.splitlines():
        parts = line.split(None, 1)
        if parts and parts[0] in ("bar.sync", "bar.arrive", "barrier.sync", "barrier.arrive"):
            found.append((parts[0].replace("barrier", "bar"), parts[1].rstrip(";").strip()))
    return found


def _matches(found: list[tuple[str, str]], operands: bool) -> bool:
    """Whether the PTX's barriers are INSTRUCTIONS (their operands too: `operands`; CUDA C's
    inline asm takes its operands in registers)."""
    return len(found) == len(INSTRUCTIONS) and all(
        op == want_op and (not operands or given.startswith(want))
        for (op, given), (want_op, want) in zip(found, INSTRUCTIONS, strict=True)
    )


def test_cuda_c_spells_them_as_inline_ptx() -> None:
    source = emit_cuda(_lowered())
    assert 'asm volatile("bar.arrive %0, %1;" :: "r"((int)(1)), "r"(256) : "memory");' in source
    assert 'asm volatile("bar.sync %0, %1;" :: "r"((int)(1)), "r"(256) : "memory");' in source
    assert '"r"((int)(tx / 128 + 2)), "r"(128)' in source
    assert "__syncthreads" not in source


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_c_assembles(arch: str, tmp_path: Path) -> None:
    ptx = ptx_of_cuda(emit_cuda(_lowered()), arch, tmp_path)
    assert _matches(_barriers(ptx), operands=False), _barriers(ptx)
    assert ptxas_accepts(ptx, tmp_path, arch) == ""


def test_nvptx_uses_the_convergent_barrier_intrinsics() -> None:
    ir = emit_nvvm_ir(_lowered(), arch="sm_80")
    assert 'call void @"llvm.nvvm.barrier.cta.arrive.aligned.count"(i32 1, i32 256)' in ir
    assert 'call void @"llvm.nvvm.barrier.cta.sync.aligned.count"(i32 1, i32 256)' in ir


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvptx_assembles(arch: str, tmp_path: Path) -> None:
    ptx = emit_ptx(_lowered(), arch=arch)
    assert _matches(_barriers(ptx), operands=True), _barriers(ptx)
    assert ptxas_accepts(ptx, tmp_path, arch) == ""


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("T.ptx_bar_sync(0, 128)", "barrier 0 is __syncthreads'"),
        ("T.ptx_bar_arrive(16, 128)", "a named barrier is 1 to 15, not 16"),
        ("T.ptx_bar_sync(1, 96 + tx)", "the thread count must be a constant multiple of 32"),
    ],
)
def test_a_bad_id_or_count_is_refused_at_the_call(call: str, message: str) -> None:
    text = KERNEL.replace("T.ptx_bar_sync(tx // 128 + 2, 128)", call)
    line = next(i for i, item in enumerate(text.splitlines(), 1) if call in item)
    lowered = _lowered(text)
    for emit in (emit_cuda, emit_ptx):
        with pytest.raises(DiagnosticError) as error:
            emit(lowered)
        diagnostic = error.value.diagnostics[0]
        assert message in diagnostic.message
        assert diagnostic.span is not None and diagnostic.span.line == line


SPLIT = """
@T.prim_func
def main(
    A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")
):
    tx = T.launch_thread("threadIdx.x", 256)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    with T.attr(0, "warp_specialize_scope", 128):
        if tx >= 128:
            C[tx - 128] = T.float32(1)
        else:
            S[tx] = A[tx]
            B[tx] = S[127 - tx]
"""


def test_a_block_barrier_left_inside_a_split_is_refused_by_the_backends() -> None:
    """thread-sync gives the consumers `bar.sync 1, 128`; a block barrier that a later pass
    puts in a branch (an all-reduce's) would hang the block on the GPU: both backends refuse
    it at the barrier."""
    lowered = _lowered(SPLIT)
    emit_cuda(lowered)  # the consumers' named barrier is fine

    class _AddBlockBarrier(Mutator):
        def visit_IfThenElse(self, node: S.IfThenElse) -> S.Stmt:
            assert node.else_case is not None
            sync = E.Call(E.IntImm(0).dtype, "tvm_storage_sync", (E.StringImm("shared"),))
            return S.IfThenElse(
                node.condition, node.then_case, S.seq(node.else_case, S.Evaluate(sync))
            )

    kernel = next(name for name, func in lowered.functions if name != "main")
    broken = IRModule(
        tuple(
            (name, _AddBlockBarrier().visit(func) if name == kernel else func)
            for name, func in lowered.functions
        )
    )
    for emit in (emit_cuda, lambda module: emit_ptx(module, arch="sm_90a")):
        with pytest.raises(DiagnosticError, match="__syncthreads .* inside a warp-specialized"):
            emit(broken)
