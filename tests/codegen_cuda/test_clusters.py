"""Thread-block clusters (sm_90; tirc.ir.cluster): the interpreter runs a cluster's blocks
together (cluster registers, the cluster barrier, a peer's shared memory through mapa, races
and stalls reported where they are), the CUDA C carries `__cluster_dims__` and nvcc takes it for
sm_90a, a plan's annotation reaches the kernel, and what a GPU would refuse is refused, located,
through the command line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts, require_tool
from tests.runtime.fake_cuda import FakeDriver, fake_device
from tirc.cli.main import main
from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.driver.run_cuda import run_on_cuda
from tirc.driver.schedule import apply_plan_file
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.text import parse

SAMPLES = Path(__file__).parents[2] / "samples" / "gpu"
TARGET = "cuda -arch=sm_90a"

# Each block writes its values into its shared array, the cluster syncs, and each reads its
# peer's array (the other block of its 2-block cluster) backwards through mapa; the second
# cluster barrier keeps the peer's shared memory alive until the read is done.
EXCHANGE = """\
@T.prim_func
def main(A: T.Buffer((64,), "int32")):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    bx = T.launch_thread("blockIdx.x", 4)
    tx = T.launch_thread("threadIdx.x", 16)
    S = T.alloc_buffer((16,), "int32", scope="shared")
    rank: T.let[T.int32] = T.ptx_cluster_ctarank()
    S[tx] = bx * 100 + tx
    T.ptx_barrier_cluster_arrive()  # FIRST
    T.ptx_barrier_cluster_wait()  # FIRST
    peer: T.let[T.handle("int32", "shared")] = T.ptx_map_shared_cluster(S.data, 1 - rank)
    R = T.decl_buffer((16,), "int32", data=peer, scope="shared")
    A[bx * 16 + tx] = R[15 - tx]
    T.ptx_barrier_cluster_arrive()  # SECOND
    T.ptx_barrier_cluster_wait()  # SECOND
"""

# every cluster register, on a 4 x 2 grid of 2 x 2 clusters
REGISTERS = """\
@T.prim_func
def main(A: T.Buffer((8, 8), "int32")):
    T.func_attr({"cluster_dims": [2, 2, 1]})
    bx = T.launch_thread("blockIdx.x", 4)
    by = T.launch_thread("blockIdx.y", 2)
    tx = T.launch_thread("threadIdx.x", 1)
    b = by * 4 + bx
    A[b, 0] = T.ptx_cluster_ctarank()
    A[b, 1] = T.ptx_cluster_nctarank()
    A[b, 2] = T.ptx_cluster_ctaid("x")
    A[b, 3] = T.ptx_cluster_ctaid("y")
    A[b, 4] = T.ptx_cluster_nctaid("y")
    A[b, 5] = T.ptx_clusterid("x")
    A[b, 6] = T.ptx_clusterid("y")
    A[b, 7] = T.ptx_nclusterid("x")
"""


def _without(text: str, mark: str) -> str:
    return "".join(line for line in text.splitlines(True) if f"# {mark}" not in line)


def _lowered(text: str, name: str = "cluster.tir") -> IRModule:
    return lower_module(parse(text, name=name), target=TARGET)


def _run(module: IRModule, shape: tuple[int, ...], model: str = "threads") -> np.ndarray:
    out = np.full(shape, -1, "int32")
    run(module["main"], {"A": out}, module=module, gpu_model=model)
    return out


def _exchange_expected() -> np.ndarray:
    blocks = np.arange(4)
    peers = blocks ^ 1  # the other block of each 2-block cluster
    return (peers[:, None] * 100 + (15 - np.arange(16))[None, :]).reshape(-1).astype("int32")


@pytest.mark.parametrize("model", ["threads", "lockstep"])
def test_peers_read_each_others_shared_memory_after_the_cluster_barrier(model: str) -> None:
    # lockstep has no clusters: the kernel runs in the thread model whichever is asked for
    got = _run(_lowered(EXCHANGE), (64,), model)
    np.testing.assert_array_equal(got, _exchange_expected())


def test_the_unlowered_program_gives_each_block_its_shared_memory() -> None:
    module = parse(EXCHANGE, name="exchange.tir")  # S allocated outside the kernel (s-tir)
    np.testing.assert_array_equal(_run(module, (64,)), _exchange_expected())


def test_without_the_barrier_the_peer_read_is_a_race() -> None:
    module = _lowered(_without(EXCHANGE, "FIRST"), "exchange.tir")
    with pytest.raises(DiagnosticError) as caught:
        _run(module, (64,))
    (error,) = caught.value.diagnostics
    assert error.message.startswith(
        "data race on shared memory 'S' at byte 0: a thread of block (1, 0, 0) writes it after "
        "a thread of block (0, 0, 0) read it, with no barrier in between"
    ), error.message
    assert str(error.span).startswith("exchange.tir:8:")  # block 1's store
    (note,) = error.notes
    assert str(note.span).startswith("exchange.tir:11:")  # block 0's read through mapa


def test_a_block_that_returned_has_no_shared_memory_to_read() -> None:
    module = _lowered(_without(EXCHANGE, "SECOND"), "exchange.tir")
    with pytest.raises(DiagnosticError, match=r"'S of block \(0, 0, 0\)' is gone: every thread"):
        _run(module, (64,))


def test_cluster_registers() -> None:
    got = _run(_lowered(REGISTERS), (8, 8))
    by, bx = np.divmod(np.arange(8), 4)
    want = np.stack(
        [
            bx % 2 + 2 * (by % 2),  # rank: x first
            np.full(8, 4),
            bx % 2,
            by % 2,
            np.full(8, 2),
            bx // 2,
            by // 2,
            np.full(8, 2),  # 4 blocks along x in clusters of 2
        ],
        axis=1,
    )
    np.testing.assert_array_equal(got, want)


def test_a_kernel_without_clusters_is_a_cluster_of_one() -> None:
    text = REGISTERS.replace('    T.func_attr({"cluster_dims": [2, 2, 1]})\n', "")
    got = _run(_lowered(text), (8, 8), "lockstep")
    by, bx = np.divmod(np.arange(8), 4)
    one, zero = np.ones(8), np.zeros(8)
    np.testing.assert_array_equal(got, np.stack([zero, one, zero, zero, one, bx, by, one + 3], 1))


STALL = """\
@T.prim_func
def main(A: T.Buffer((32,), "int32")):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 16)
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
    T.tvm_storage_sync("shared")
    if T.ptx_cluster_ctarank() == 1:
        T.ptx_mbarrier_wait(bar.data, 0, 0)
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    A[bx * 16 + tx] = 1
"""


def test_a_stalled_cluster_is_an_error_at_the_wait_naming_who_has_not_arrived() -> None:
    with pytest.raises(DiagnosticError) as caught:
        _run(_lowered(STALL, "stall.tir"), (32,))
    (error,) = caught.value.diagnostics
    assert str(error.span).startswith("stall.tir:13:")  # the cluster wait
    assert "every thread of the cluster waits and none can go on" in error.message
    assert "16 threads arrived, 16 have not (in blocks (1, 0, 0))" in error.message
    (note,) = error.notes
    assert str(note.span).startswith("stall.tir:11:")  # block 1 waits on its mbarrier
    assert note.message.startswith(
        "16 threads wait here (in block (1, 0, 0)), for the mbarrier's parity 0"
    )


# Block 1's thread 0 waits on an mbarrier nobody arrives on while its other threads wait at
# the block's barrier (at another place than block 0's barrier): the cluster is deadlocked on
# the mbarrier, which is what is reported, with a note at each barrier.
STALL_AT_BARRIERS = """\
@T.prim_func
def main(A: T.Buffer((32,), "int32")):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 16)
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
    T.tvm_storage_sync("shared")
    if T.ptx_cluster_ctarank() == 1:
        if tx == 0:
            T.ptx_mbarrier_wait(bar.data, 0, 0)
        T.tvm_storage_sync("shared")
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    A[bx * 16 + tx] = 1
"""


def test_a_cluster_deadlocked_on_an_mbarrier_is_reported_as_such_beside_block_barriers() -> None:
    """Once an IndexError (a note read a barrier's request as a poll's) or a report of
    mismatched barriers; now the deadlock at the mbarrier wait, as for a single block."""
    with pytest.raises(DiagnosticError) as caught:
        _run(_lowered(STALL_AT_BARRIERS, "stall.tir"), (32,))
    (error,) = caught.value.diagnostics
    assert "every thread of the cluster waits and none can go on" in error.message
    assert "(32 threads waiting)" in error.message
    notes = {str(note.span).split(":")[1]: note.message for note in error.notes}
    waits = {line: message for line, message in notes.items() if "for the" in message}
    barrier = {line: message for line, message in notes.items() if "at a barrier" in message}
    # the first poll (block 0's threads at the cluster wait, line 15) carries the error; the
    # mbarrier wait (line 12) and block 1's barrier (line 13) are notes
    assert str(error.span).startswith("stall.tir:15:")
    assert waits == {
        "12": "1 thread waits here (in block (1, 0, 0)), for the mbarrier's parity 0: phase 0 "
        "with 1 of 1 arrivals and 0 transaction bytes pending"
    }
    assert barrier == {"13": "15 threads wait here (in block (1, 0, 0)), at a barrier"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("    T.ptx_barrier_cluster_arrive()  # FIRST\n", ""), "waits without having arrived"),
        (
            ("    T.ptx_barrier_cluster_wait()  # FIRST\n", ""),
            "arrives again before it waited",
        ),
    ],
)
def test_barrier_halves_out_of_order_are_errors(change: tuple[str, str], message: str) -> None:
    with pytest.raises(DiagnosticError, match=message):
        _run(_lowered(EXCHANGE.replace(*change)), (64,))


def test_a_launch_that_is_not_whole_clusters_is_a_fault_at_the_launch() -> None:
    text = """\
@T.prim_func
def main(a: T.handle, n: T.int32):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    A = T.match_buffer(a, (n,), "int32")
    bx = T.launch_thread("blockIdx.x", n)
    A[bx] = T.ptx_cluster_ctarank()
"""
    module = _lowered(text)
    out = np.zeros(4, "int32")
    run(module["main"], {"a": out, "n": 4}, module=module)
    np.testing.assert_array_equal(out, [0, 1, 0, 1])
    with pytest.raises(DiagnosticError, match="x 3 is not a multiple of 2"):
        run(module["main"], {"a": np.zeros(3, "int32"), "n": 3}, module=module)


def test_cuda_c_has_the_cluster_dims_and_nvcc_takes_it(tmp_path: Path) -> None:
    source = emit_cuda(_lowered(EXCHANGE))
    assert "__cluster_dims__(2, 1, 1) main_kernel(" in source
    assert 'asm volatile("barrier.cluster.arrive;\\n" ::: "memory");' in source
    assert 'asm volatile("barrier.cluster.wait;\\n" ::: "memory");' in source
    assert "int* peer = (int*)(tirc_map_shared_cluster(S, (int)(1 - rank)));" in source
    assert "__syncthreads" not in source.split("tirc_map_shared_cluster(S")[1].split("}")[0]
    complaint = nvcc_accepts(source, tmp_path, arch="sm_90a")
    assert not complaint, complaint
    ptx = _nvcc_ptx(source, tmp_path)
    assert ".reqnctapercluster 2, 1, 1" in ptx and "mapa.u64" in ptx
    assert "mov.u32 %r1, %cluster_ctarank;" in ptx
    complaint = ptxas_accepts(ptx, tmp_path, arch="sm_90a")
    assert not complaint, complaint


def _nvcc_ptx(source: str, directory: Path) -> str:
    (directory / "k.cu").write_text(source)
    done = subprocess.run(
        [require_tool("nvcc"), "-arch=sm_90a", "-ptx", str(directory / "k.cu")]
        + ["-o", str(directory / "k.ptx")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return (directory / "k.ptx").read_text()


def test_a_variable_grid_is_checked_when_launched(tmp_path: Path) -> None:
    text = """\
@T.prim_func
def main(a: T.handle, n: T.int32):
    T.func_attr({"cluster_dims": [4, 1, 1]})
    A = T.match_buffer(a, (n,), "int32")
    bx = T.launch_thread("blockIdx.x", n)
    A[bx] = bx
"""
    module = parse(text, name="grid.tir")
    source = emit_cuda(_lowered(text))
    assert "if (main_kernel_grid.x % 4 != 0) return (int)cudaErrorInvalidClusterSize;" in source
    complaint = nvcc_accepts(source, tmp_path, arch="sm_90a")  # the launcher too
    assert not complaint, complaint
    fake = FakeDriver()
    args = {"a": np.zeros(8, "int32"), "n": 8}
    run_on_cuda(module, "main", module["main"], TARGET, args, device=fake_device(fake))
    assert len(fake.launches) == 1
    args = {"a": np.zeros(6, "int32"), "n": 6}
    with pytest.raises(DiagnosticError, match="clusters of 4 x 1 x 1 blocks, but the grid 6 x 1"):
        run_on_cuda(module, "main", module["main"], TARGET, args, device=fake_device())


def test_a_plan_asks_for_clusters_on_the_blockidx_loop(tmp_path: Path) -> None:
    plan = tmp_path / "cluster.plan.json"
    plan.write_text(
        '{"version": 1, "func": "main", "steps": ['
        '{"op": "get_sblock", "name": "B", "out": "B"},'
        '{"op": "get_loops", "block": "B", "out": ["i", "j"]},'
        '{"op": "bind", "loop": "i", "thread": "blockIdx.x"},'
        '{"op": "bind", "loop": "j", "thread": "threadIdx.x"},'
        '{"op": "annotate", "target": "i", "key": "cluster_dims", "value": [2, 1, 1]}]}'
    )
    program = SAMPLES / "elementwise.tir"
    scheduled, _ = apply_plan_file(parse(program.read_text(), name=str(program)), str(plan))
    lowered = lower_module(scheduled, target=TARGET)
    kernel = next(func for name, func in lowered.functions if name == "main_kernel")
    assert kernel.attrs.get("cluster_dims") == (2, 1, 1)
    assert "__cluster_dims__(2, 1, 1) main_kernel(" in emit_cuda(lowered)


def _row_sum(barriers: tuple[int, ...] = (0, 1)) -> tuple[np.ndarray, np.ndarray]:
    """The sample with the cluster barriers numbered `barriers` kept, run on random rows."""
    path = SAMPLES / "cluster_row_sum.tir"
    pair = "    T.ptx_barrier_cluster_arrive()\n    T.ptx_barrier_cluster_wait()\n"
    parts = path.read_text().split(pair)
    assert len(parts) == 3
    text = parts[0] + "".join((pair if n in barriers else "") + parts[n + 1] for n in (0, 1))
    module = lower_module(
        parse(text, name=str(path), defines={"M": "4", "N": "512"}), target=TARGET
    )
    a = np.random.default_rng(0).standard_normal((4, 512)).astype("float32")
    b = np.zeros(4, "float32")
    run(module["main"], {"A": a, "B": b}, module=module)
    return a, b


def test_the_sample_sums_rows_across_its_clusters() -> None:
    a, b = _row_sum()
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_the_sample_needs_both_of_its_cluster_barriers() -> None:
    with pytest.raises(DiagnosticError, match="data race on shared memory 'part of block"):
        _row_sum((1,))
    with pytest.raises(DiagnosticError) as caught:
        _row_sum((0,))
    (error,) = caught.value.diagnostics
    assert error.message.startswith(
        "block (0, 0, 0) reaches the shared memory of block (1, 0, 0), whose threads may all "
        "return before it does"
    ), error.message
    assert str(error.span).startswith(f"{SAMPLES / 'cluster_row_sum.tir'}:42:")  # P[0]


REFUSALS = {
    "sm_80": (
        EXCHANGE,
        "cuda -arch=sm_80",
        "1:1",
        'thread-block clusters ("cluster_dims") need sm_90 or later, but the target is sm_80',
    ),
    "16 blocks": (
        EXCHANGE.replace("[2, 1, 1]", "[16, 1, 1]"),
        TARGET,
        "1:1",
        "a cluster of 16 x 1 x 1 = 16 blocks is more than the 8 that every GPU with clusters "
        "runs (the portable size)",
    ),
    "grid": (
        EXCHANGE.replace('"blockIdx.x", 4', '"blockIdx.x", 3'),
        TARGET,
        "4:40",
        "main_kernel runs in clusters of 2 x 1 x 1 blocks, but the grid 3 x 1 x 1 is not a whole "
        "number of 2 x 1 x 1 clusters (x 3 is not a multiple of 2)",
    ),
    "shape": (
        EXCHANGE.replace("[2, 1, 1]", "[2, 1]"),
        TARGET,
        "1:1",
        '"cluster_dims" must be three positive integers (x, y, z), not (2, 1)',
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_are_located_through_the_command_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, target, place, message = REFUSALS[case]
    source = tmp_path / "kernel.tir"
    source.write_text(text)
    code = main(["compile", str(source), "--target", target, "--emit", "cu", "-o", "-"])
    output = capsys.readouterr()
    shown = output.err + output.out
    assert code == 1, shown
    assert message in shown, shown
    assert f"{source}:{place}" in shown, shown
    assert "Traceback" not in shown


def test_a_bad_axis_is_refused_at_the_call_by_the_backend_and_the_interpreter() -> None:
    module = _lowered(REGISTERS.replace('T.ptx_clusterid("y")', 'T.ptx_clusterid("w")'))
    for attempt in (lambda: emit_cuda(module), lambda: _run(module, (8, 8))):
        with pytest.raises(DiagnosticError) as caught:
            attempt()
        (error,) = caught.value.diagnostics
        assert error.message == 'T.ptx_clusterid takes the axis "x", "y" or "z"'
        assert str(error.span) == "cluster.tir:14:15"


def test_arrivers_go_on_early_when_the_others_need_them() -> None:
    # half the threads arrive before a block barrier, half after it: holding the first half
    # at their arrive would stall the block, so they go on, and the phase still completes
    text = """\
@T.prim_func
def main(A: T.Buffer((64,), "int32")):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    bx = T.launch_thread("blockIdx.x", 4)
    tx = T.launch_thread("threadIdx.x", 16)
    S = T.alloc_buffer((16,), "int32", scope="shared")
    S[tx] = bx * 100 + tx
    if tx < 8:
        T.ptx_barrier_cluster_arrive()
    T.tvm_storage_sync("shared")
    if tx >= 8:
        T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    A[bx * 16 + tx] = S[15 - tx]
"""
    got = _run(_lowered(text), (64,))
    want = (np.arange(4)[:, None] * 100 + (15 - np.arange(16))[None, :]).reshape(-1)
    np.testing.assert_array_equal(got, want)


# rank 0 of each 2-block cluster brings its cluster's 8 x 16 tile of A into both blocks' shared
# memory with one multicast TMA load; each block expects the bytes on its own mbarrier, waits,
# and copies the tile out. The cluster barrier after the inits makes each block's barrier
# ready before its peer's copy completes on it.
MULTICAST = """\
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((512,), "float32")):
    T.func_attr({"cluster_dims": [2, 1, 1]})
    bx = T.launch_thread("blockIdx.x", 4)
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    bar = T.alloc_buffer((1,), "uint64", scope="shared")
    if tx == 0:
        T.ptx_mbarrier_init(bar.data, 0, 1)
        T.ptx_fence_proxy_async()
    T.ptx_barrier_cluster_arrive()
    T.ptx_barrier_cluster_wait()
    if tx == 0:
        T.ptx_mbarrier_arrive_expect_tx(bar.data, 0, 512)
        if T.ptx_cluster_ctarank() == 0:
            T.ptx_tma_load_multicast(
                "float32", A.data, 2, 0, 16, 16, 8, 16, S.data, 0, bar.data, 0, MASK,
                T.ptx_clusterid("x") * 8, 0
            )
    T.ptx_mbarrier_wait(bar.data, 0, 0)
    B[bx * 128 + tx] = S[tx]
"""


def _multicast(mask: int) -> tuple[np.ndarray, np.ndarray]:
    module = _lowered(MULTICAST.replace("MASK", str(mask)), "multicast.tir")
    a = np.arange(256, dtype="float32").reshape(16, 16)
    b = np.zeros(512, "float32")
    run(module["main"], {"A": a, "B": b}, module=module)
    return a, b


def test_a_multicast_tma_load_lands_in_every_block_of_its_mask() -> None:
    a, b = _multicast(0b11)
    tiles = [a[bx // 2 * 8 : bx // 2 * 8 + 8].reshape(-1) for bx in range(4)]
    np.testing.assert_array_equal(b, np.concatenate(tiles))


def test_a_block_left_out_of_the_mask_waits_for_its_bytes_forever() -> None:
    with pytest.raises(DiagnosticError) as caught:
        _multicast(0b01)
    (error,) = caught.value.diagnostics
    assert str(error.span) == "multicast.tir:20:5"  # the mbarrier wait
    assert "in thread (0, 0, 0) of block (1, 0, 0)" in error.message
    assert "0 of 1 arrivals and 512 transaction bytes pending" in error.message


def test_a_mask_past_the_cluster_is_an_error_at_the_load() -> None:
    with pytest.raises(DiagnosticError, match="the mask 0x4 must name some of the cluster's 2"):
        _multicast(0b100)


def test_multicast_cuda_c_and_ptxas(tmp_path: Path) -> None:
    source = emit_cuda(_lowered(MULTICAST.replace("MASK", "3")))
    assert (
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" in source
    )
    assert '"h"((unsigned short)(3))' in source
    complaint = nvcc_accepts(source, tmp_path, arch="sm_90a")
    assert not complaint, complaint
    complaint = ptxas_accepts(_nvcc_ptx(source, tmp_path), tmp_path, arch="sm_90a")
    assert not complaint, complaint


def test_multicast_arguments_are_counted_at_the_call() -> None:
    text = MULTICAST.replace("bar.data, 0, MASK,", "bar.data, 0,")
    with pytest.raises(DiagnosticError) as caught:
        emit_cuda(_lowered(text, "multicast.tir"))
    (error,) = caught.value.diagnostics
    assert error.message.startswith(
        "T.ptx_tma_load_multicast of rank 2 takes 15 arguments (dtype, tensor, rank, swizzle, "
        "2 extents, 2 box extents, shared, offset, barrier, index, mask, 2 coordinates), not 14"
    ), error.message
    assert str(error.span) == "multicast.tir:16:13"
