"""The GPU memory passes (inject-software-pipeline, inject-virtual-thread, inject-double-buffer,
storage-rewrite, merge-shared-memory-allocations) through the whole cuda pipeline: the lowered
program computes what the original does in the interpreter's thread model, both backends'
output passes NVIDIA's tools; and the inputs the passes refuse, with their messages."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts
from tests.transform.helpers import run_passes
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.text import parse

PROGRAMS = Path(__file__).parent / "programs"
NAMES = ("pipelined_vthread_matmul", "dynamic_shared_stages")


def _program(name: str) -> tuple[IRModule, IRModule]:
    path = PROGRAMS / f"{name}.tir"
    module = parse(path.read_text(), name=str(path))
    return module, lower_module(module, target="cuda")


def _main(module: IRModule):  # type: ignore[no-untyped-def]
    return module["main"] if "main" in module else module.functions[0][1]


def _nodes(module: IRModule, kind: type) -> list[object]:
    found: list[object] = []
    # every function: the host and the kernels split-host-device made
    walk(module, lambda node: found.append(node) if isinstance(node, kind) else None)
    return found


def test_lowered_pipelined_matmul_matches_the_original() -> None:
    original, lowered = _program("pipelined_vthread_matmul")
    inputs = random_inputs(_main(original), 3)
    expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
    got = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(_main(original), expected)
    run(_main(lowered), got, module=lowered)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_lowered_program_compiles(name: str, tmp_path: Path) -> None:
    _, lowered = _program(name)
    complaint = nvcc_accepts(emit_cuda(lowered), tmp_path)
    assert not complaint, complaint
    complaint = ptxas_accepts(emit_ptx(lowered, arch="sm_90"), tmp_path)
    assert not complaint, complaint


def test_pipeline_versions_shared_buffers_and_drops_virtual_threads() -> None:
    _, lowered = _program("pipelined_vthread_matmul")
    allocations = {node.buffer.name: node.buffer for node in _nodes(lowered, S.AllocBuffer)}  # type: ignore[attr-defined]
    assert allocations["X_shared"].shape[0].value == 3 * 64  # three stages in flight
    assert allocations["Z_local"].shape[0].value == 2 * 8  # one slice per virtual thread
    assert not any(
        node.key == "virtual_thread"  # type: ignore[attr-defined]
        or node.node.thread_tag.startswith("vthread")  # type: ignore[attr-defined]
        for node in _nodes(lowered, S.AttrStmt)
        if isinstance(node.node, S.IterVar)  # type: ignore[attr-defined]
    )


def test_lowered_dynamic_shared_program_computes_its_formula() -> None:
    """The s-tir program exchanges values between threads through shared memory with no
    barrier (lowering adds them), so the interpreter's thread model cannot run it as written:
    the lowered one is checked against what it means, C = 2 * (A + B)."""
    _, lowered = _program("dynamic_shared_stages")
    args = random_inputs(_main(lowered), 5)
    run(_main(lowered), args, module=lowered)
    want = 2 * (args["A"] + args["B"].astype(np.float32))  # type: ignore[union-attr]
    np.testing.assert_allclose(args["C"], want, rtol=1e-5, atol=1e-5)


def test_dynamic_shared_buffers_become_one_launch_size(tmp_path: Path) -> None:
    _, lowered = _program("dynamic_shared_stages")
    allocations = [node.buffer for node in _nodes(lowered, S.AllocBuffer)]  # type: ignore[attr-defined]
    dynamic = [b for b in allocations if b.scope == "shared.dyn"]
    assert [b.name for b in dynamic] == ["buf_dyn_shmem"]
    views = [node.buffer for node in _nodes(lowered, S.DeclBuffer)]  # type: ignore[attr-defined]
    on_it = [view for view in views if view.data is dynamic[0].data]
    assert sorted(view.name for view in on_it) == ["S1", "S2", "S3"]
    size = dynamic[0].shape[0].value
    assert size % 16 == 0
    assert max(view.shape[0].value * view.dtype.bytes for view in on_it) == size
    source = emit_cuda(lowered)
    assert "extern __shared__" in source and f", {size}, stream>>>" in source


PIPELINED = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    for i in T.serial(
        {extent},
        annotations={{"software_pipeline_stage": {stages}, "software_pipeline_order": {orders}}},
    ):
        with T.sblock(""):
            B = T.sblock_alloc_buffer((1,), scope="local")
            with T.sblock(""):
                B[0] = A[i]
            with T.sblock(""):
                C[i] = B[0]
"""


@pytest.mark.parametrize(
    ("extent", "stages", "orders", "message"),
    [
        (16, "[0, 1, 2]", "[0, 1, 2]", "has 3 entries but its body has 2 statements"),
        (16, "[0, 1]", "[0, 0]", "must be a permutation of 0..1"),
        (16, "[0, -1]", "[0, 1]", "must be a list of non-negative integers"),
    ],
)
def test_software_pipeline_rejects(extent: int, stages: str, orders: str, message: str) -> None:
    text = PIPELINED.format(extent=extent, stages=stages, orders=orders)
    module = parse(text, name="pipelined.tir")
    with pytest.raises(DiagnosticError, match=message):
        run_passes(module, "inject-software-pipeline")


def test_virtual_thread_kept_where_a_widened_buffer_escapes() -> None:
    text = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32")):
    with T.launch_thread("threadIdx.x", 8) as tx:
        vx = T.launch_thread("vthread.x", 2)
        L = T.alloc_local((1,))
        L[0] = A[vx * 8 + tx]
        T.evaluate(T.call_extern("int32", "consume", L.data))
"""
    module = parse(text, name="escape.tir")
    lowered = run_passes(module, "inject-virtual-thread")
    assert any(
        isinstance(node.node, S.IterVar) and node.node.thread_tag == "vthread.x"  # type: ignore[attr-defined]
        for node in _nodes(lowered, S.AttrStmt)
    )
