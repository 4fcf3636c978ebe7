# ruff: noqa: E501 -- the programs are written one statement per line, as TVM prints them
"""Adjacent `T.parallel` loops of one sequence share one OpenMP region: one `GOMP_parallel`
and a `GOMP_barrier` between the loops. The compiled code equals the interpreter when a loop
reads what the loop before wrote in another thread's share, and a failed assertion in a
shared region returns a failed status without hanging the team at a barrier.

The runs that depend on the number of threads go in a child process with OMP_NUM_THREADS set
(libgomp reads it once per process); more threads than cores makes a missing barrier show.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.codegen.helpers import ROOT, SAMPLES, parse_text
from tirc.codegen.llvm import compile_module
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.driver.target import parse_target
from tirc.ir.function import IRModule

# loop 2, iteration i reads what loop 1 wrote in iteration 3 - i, backwards: without the
# barrier a thread reads the row another thread is still writing
EXCHANGE = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 65536), "float32"), B: T.Buffer((4, 65536), "float32")):
    T.func_attr({"tirx.noalias": True})
    tmp = T.alloc_buffer((4, 65536), "float32")
    for i in T.parallel(4):
        for j in range(65536):
            with T.sblock("tmp"):
                vi, vj = T.axis.remap("SS", [i, j])
                tmp[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)
    for i in T.parallel(4):
        for j in range(65536):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = tmp[3 - vi, 65535 - vj]
"""

# three adjacent parallel loops; the second fails for i >= n
GUARDED = """
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle, n: T.int32):
    T.func_attr({"tirx.noalias": True})
    A = T.match_buffer(a, (64,), "float32")
    B = T.match_buffer(b, (64,), "float32")
    C = T.match_buffer(c, (64,), "float32")
    for i in T.parallel(64):
        A[i] = T.float32(1)
    for i in T.parallel(64):
        assert i < n, "i is too large"
        B[i] = A[63 - i] + T.float32(1)
    for i in T.parallel(64):
        C[i] = B[63 - i] + T.float32(1)
"""

# a serial statement between the loops: two regions
SEPARATED = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    T.func_attr({"tirx.noalias": True})
    A = T.match_buffer(a, (64,), "float32")
    B = T.match_buffer(b, (64,), "float32")
    for i in T.parallel(64):
        A[i] = T.float32(1)
    B[0] = A[5]
    for i in T.parallel(63):
        B[i + 1] = A[62 - i] + T.float32(1)
"""

# the second loop's extent is read from memory the first loop writes: it is computed after
# the barrier, in every thread
LOADED_EXTENT = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    T.func_attr({"tirx.noalias": True})
    A = T.match_buffer(a, (64,), "int32")
    B = T.match_buffer(b, (64,), "int32")
    for i in T.parallel(64):
        A[i] = 40 + i % 2
    for i in T.parallel(A[3]):
        B[i] = A[63 - i] * 3
"""


def llvm_ir(module: IRModule) -> str:
    lowered = lower_module(module, target="cpu")
    return compile_module(lowered, parse_target("cpu"), 3).llvm_ir()


def calls(text: str, name: str) -> int:
    return len(re.findall(rf"call void @{name}\(", text))


def test_the_conv2d_sample_forks_the_team_once() -> None:
    bench = SAMPLES / "bench"
    module = parse_text((bench / "conv2d56.tir").read_text())
    scheduled, _ = apply_plan_file(module, str(bench / "conv2d56.plan.json"))
    text = llvm_ir(scheduled)
    assert calls(text, "GOMP_parallel") == 1
    assert calls(text, "GOMP_barrier") == 1
    assert "atomic" not in text  # nothing can fail: no status check after the barrier


def test_three_adjacent_loops_share_one_region_with_two_barriers() -> None:
    text = llvm_ir(parse_text(GUARDED))
    assert calls(text, "GOMP_parallel") == 1
    assert calls(text, "GOMP_barrier") == 2
    # the failing loop stores the status atomically; the third loop checks it
    assert re.search(r"atomicrmw xchg ptr %[\w.]+, i32 -1", text)
    assert "load atomic i32" in text


def test_a_statement_between_parallel_loops_keeps_two_regions() -> None:
    text = llvm_ir(parse_text(SEPARATED))
    assert calls(text, "GOMP_parallel") == 2
    assert calls(text, "GOMP_barrier") == 0


def test_a_nested_parallel_pair_runs_serially_inside_the_outer_region() -> None:
    nested = """
@T.prim_func
def main(a: T.handle):
    A = T.match_buffer(a, (8, 16), "float32")
    for i in T.parallel(8):
        for j in T.parallel(8):
            A[i, j] = T.float32(1)
        for j in T.parallel(8):
            A[i, j + 8] = A[i, 7 - j] + T.float32(1)
"""
    text = llvm_ir(parse_text(nested))
    assert calls(text, "GOMP_parallel") == 1
    assert calls(text, "GOMP_barrier") == 0


# B is large for a 4 KiB cache and never read: its stores stream
STREAMED = """
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"tirx.noalias": True})
    A = T.match_buffer(a, (4096,), "float32")
    B = T.match_buffer(b, (4096,), "float32")
    C = T.match_buffer(c, (4096,), "float32")
    for i in T.parallel(256):
        B[i * 16:i * 16 + 16] = A[T.Ramp(i * 16, 1, 16)] * T.Broadcast(T.float32(2), 16)
    for i in T.parallel(256):
        C[i * 16:i * 16 + 16] = A[T.Ramp(4080 - i * 16, 1, 16)] + T.Broadcast(T.float32(1), 16)
"""


def test_streamed_stores_are_fenced_before_the_barrier() -> None:
    lowered = lower_module(parse_text(STREAMED), target="cpu")
    text = compile_module(lowered, parse_target("cpu -llc=4K"), 3).llvm_ir()
    assert calls(text, "GOMP_parallel") == 1
    assert "!nontemporal" in text
    fence_then_barrier = (
        r"call void @llvm\.x86\.sse\.sfence\(\)\n\s*(tail )?call void @GOMP_barrier"
    )
    assert re.search(fence_then_barrier, text)


CHILD = """
import numpy as np
from tests.codegen.helpers import parse_text, run_both
from tests.codegen.test_parallel_regions import {program}
from tirc.driver.run_cpu import jit_function
{body}
print("ok")
"""


def in_threads(threads: int, program: str, body: str) -> None:
    """Runs `body` in a child process with `threads` OpenMP threads; it must print ok. Its
    waiting threads sleep soon (as docs/abi.md advises on a shared machine): spinning, they
    took whole time slices from the threads they wait for, and each run took tens of seconds."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.setdefault("GOMP_SPINCOUNT", "1000")
    script = CHILD.format(program=program, body=body)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


@pytest.mark.parametrize("threads", [2, 4])
def test_a_loop_reads_what_other_threads_wrote_in_the_loop_before(threads: int) -> None:
    in_threads(
        threads,
        "EXCHANGE",
        "module = parse_text(EXCHANGE)\nfor seed in range(8):\n    run_both(module, seed=seed)",
    )


def test_a_loop_extent_loaded_after_the_barrier() -> None:
    in_threads(3, "LOADED_EXTENT", "run_both(parse_text(LOADED_EXTENT))")


FAILURE = """
call = jit_function(parse_text(GUARDED), "main", "cpu")
for _ in range(20):
    a, b, c = (np.zeros(64, np.float32) for _ in range(3))
    assert call({"a": a, "b": b, "c": c, "n": 64}) == 0
    assert np.all(a == 1) and np.all(b == 2) and np.all(c == 3)
    a, b, c = (np.zeros(64, np.float32) for _ in range(3))
    assert call({"a": a, "b": b, "c": c, "n": 10}) != 0
    assert np.all(a == 1)  # the loop before the failure ran whole
    assert np.all(b[:10] == 2)  # the failing loop's first thread got that far
    assert np.all(c == 0)  # the loop after the failure never ran
"""


@pytest.mark.parametrize("threads", [1, 4])
def test_a_failed_assertion_in_a_shared_region_returns_failure(threads: int) -> None:
    in_threads(threads, "GUARDED", FAILURE)


def test_a_loop_whose_bounds_call_a_function_starts_its_own_region() -> None:
    # each thread would call `count` after the barrier: the call stays in the caller, once
    called = """
@T.prim_func
def main(a: T.handle):
    A = T.match_buffer(a, (64,), "float32")
    for i in T.parallel(64):
        A[i] = T.float32(1)
    for i in T.parallel(T.call_extern("int32", "count")):
        A[i] = A[i] + T.float32(1)
"""
    text = llvm_ir(parse_text(called))
    assert calls(text, "GOMP_parallel") == 2
    assert calls(text, "GOMP_barrier") == 0


STEPPED = """
@T.prim_func
def main(A: T.Buffer((40,), "float32"), B: T.Buffer((40,), "float32")):
    for i in T.parallel(1, 38, step=3):
        A[i] = A[i] + T.float32(1)
    for j in T.parallel(0, 40, step=7):
        B[j] = A[j] + T.float32(2)
"""

# a pipeline that leaves steps alone: the default cpu one without canonicalize-loop
STEPPED_RUN = """
import pathlib
import numpy as np
from tirc.codegen.llvm import compile_module
from tirc.driver.target import parse_target
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.runtime.jit import JitModule
text = (pathlib.Path("tirc/transform/pipelines/cpu.toml").read_text()
        .replace('name = "canonicalize-loop"', 'name = "remove-no-op"'))
pathlib.Path(TMP, "steps.toml").write_text(text)
module = parse_text(STEPPED)
lowered = lower_module(module, target="cpu", pipeline_path=str(pathlib.Path(TMP, "steps.toml")))
assert "step=3" in print_module(lowered)
jit = JitModule(compile_module(lowered, parse_target("cpu"), 3), dict(lowered.functions))
have = {"A": np.zeros(40, np.float32), "B": np.zeros(40, np.float32)}
want = {key: value.copy() for key, value in have.items()}
jit["main"](have)
run(module["main"], want, module=module)
assert np.nonzero(have["A"])[0].tolist() == list(range(1, 38, 3))
for key in have:
    np.testing.assert_array_equal(have[key], want[key])
"""


@pytest.mark.parametrize("threads", [1, 3])
def test_a_stepped_parallel_loop_runs_each_thread_on_the_step_grid(
    threads: int, tmp_path: object
) -> None:
    """A parallel loop with a step (kept by a pipeline without canonicalize-loop) gives each
    thread a chunk that starts on the step grid; it used to run every value in between."""
    body = f"from tirc.text import print_module\nTMP = {str(tmp_path)!r}\n" + STEPPED_RUN
    in_threads(threads, "STEPPED", body)
