"""`tirc.driver.run.run_file`, the body of `tirc run --target interp`: inputs from an npz by
parameter name, the rest drawn from the seed, every buffer saved, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver.run import run_file

PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 4):
        with T.sblock("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0.0)
            B[vi] = B[vi] + A[vi, vk]
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "sum.tir"
    path.write_text(PROGRAM)
    return path


def run(path: Path, **options: object) -> int:
    settings: dict[str, object] = {
        "target": "interp",
        "func": None,
        "inputs": None,
        "save": None,
        "seed": 0,
        "defines": {},
    }
    settings.update(options)
    return run_file(str(path), **settings)  # type: ignore[arg-type]


def test_inputs_by_name_and_saved_outputs(
    program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.savez(tmp_path / "in.npz", A=a)
    assert run(program, inputs=str(tmp_path / "in.npz"), save=str(tmp_path / "out.npz")) == 0
    saved = np.load(tmp_path / "out.npz")
    assert sorted(saved.files) == ["A", "B"]
    np.testing.assert_array_equal(saved["B"], a.sum(axis=1))
    np.testing.assert_array_equal(saved["A"], a)
    summary = capsys.readouterr().out
    assert (
        "ran main on interp" in summary
        and "A: float32[4, 4] (given)" in summary
        and "(random)" in summary
    )


def test_missing_inputs_come_from_the_seed(program: Path, tmp_path: Path) -> None:
    for name in ("one", "two"):
        run(program, save=str(tmp_path / f"{name}.npz"), seed=3)
    one, two = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    np.testing.assert_array_equal(one["A"], two["A"])
    assert set(np.unique(np.abs(one["A"]) * 8)) <= set(range(1, 9))  # multiples of 1/8


def test_unknown_input_names_are_an_error(program: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", A=np.zeros((4, 4), np.float32), Z=np.zeros(3))
    with pytest.raises(DiagnosticError, match="not parameters"):
        run(program, inputs=str(tmp_path / "in.npz"))


def test_wrong_dtype_or_shape_is_an_error(program: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "dtype.npz", A=np.zeros((4, 4), np.float64))
    with pytest.raises(DiagnosticError, match="float64"):
        run(program, inputs=str(tmp_path / "dtype.npz"))
    np.savez(tmp_path / "shape.npz", A=np.zeros((4, 5), np.float32))
    with pytest.raises(DiagnosticError, match="shape"):
        run(program, inputs=str(tmp_path / "shape.npz"))


def test_other_targets_are_not_available(program: Path) -> None:
    with pytest.raises(DiagnosticError, match="unknown target .rocm."):
        run(program, target="rocm")


def test_function_choice(tmp_path: Path) -> None:
    path = tmp_path / "two.tir"
    path.write_text(
        "@I.ir_module\nclass Module:\n"
        + PROGRAM.replace("def main", "def first").replace("\n", "\n    ")
        + "\n"
        + PROGRAM.replace("def main", "def second").replace("\n", "\n    ")
    )
    with pytest.raises(DiagnosticError, match="choose one with --func"):
        run(path)
    assert run(path, func="second") == 0
    with pytest.raises(DiagnosticError, match="no function 'third'"):
        run(path, func="third")


RACY_KERNEL = """
@T.prim_func
def main(A: T.Buffer((32,), "float32")):
    with T.launch_thread("blockIdx.x", 1) as bx:
        tx = T.launch_thread("threadIdx.x", 32)
        S = T.alloc_shared((1,), "float32")
        S[0] = T.Cast("float32", tx)
        A[tx] = S[0]
"""


def test_gpu_model_reaches_the_interpreter(tmp_path: Path) -> None:
    """`--gpu-model`: the thread model (the default) finds the race on S; lockstep, which
    trusts the kernel to be race-free, runs it (every lane stores, the last one wins)."""
    path = tmp_path / "racy.tir"
    path.write_text(RACY_KERNEL)
    with pytest.raises(DiagnosticError, match="data race on shared memory 'S'"):
        run(path)
    save = tmp_path / "out.npz"
    assert run(path, gpu_model="lockstep", save=str(save)) == 0
    np.testing.assert_array_equal(np.load(save)["A"], np.full(32, 31, np.float32))


BOUND_PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, thread="threadIdx.x"):
        for k in range(4):
            with T.sblock("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0.0)
                B[vi] = B[vi] + A[vi, vk]
"""


def test_gpu_model_on_a_program_without_gpu_threads_says_it_changed_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """s-tir runs its thread-bound loops one after another: `--gpu-model` there has no
    effect, and the run says so (and how to lower first); a launch gets no such note."""
    path = tmp_path / "bound.tir"
    path.write_text(BOUND_PROGRAM)
    assert run(path, gpu_model="lockstep") == 0
    assert "--gpu-model lockstep changed nothing" in capsys.readouterr().out
    racy = tmp_path / "racy.tir"
    racy.write_text(RACY_KERNEL)
    assert run(racy, gpu_model="lockstep") == 0
    assert "changed nothing" not in capsys.readouterr().out


def test_a_function_that_does_nothing_runs(tmp_path: Path) -> None:
    """A body of only `T.evaluate(0)` (no parameters either) compiles to an empty Python
    function: it runs, and the CPU check agrees (it once failed with an IndentationError)."""
    path = tmp_path / "nothing.tir"
    path.write_text("@T.prim_func\ndef main():\n    T.evaluate(0)\n")
    assert run(path) == 0
    assert run(path, target="cpu", check=True) == 0


def test_check_runs_the_interpreter_first(tmp_path: Path) -> None:
    """`--check` runs the interpreter before the compiled code: a fault the program has (here a
    division by zero, which takes a process down as SIGFPE when compiled code divides) is the
    interpreter's located error, and the compiled code never runs into it."""
    path = tmp_path / "divide.tir"
    path.write_text(
        """
@T.prim_func
def main(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32"), C: T.Buffer((4,), "int32")):
    for i in range(4):
        C[i] = T.Div(A[i], B[i])
"""
    )
    inputs = tmp_path / "in.npz"
    np.savez(inputs, A=np.arange(4, dtype=np.int32), B=np.zeros(4, np.int32))
    with pytest.raises(DiagnosticError, match="integer division by zero"):
        run(path, target="cpu", check=True, inputs=str(inputs))


def test_check_refuses_what_the_cpu_cannot_run_before_interpreting(tmp_path: Path) -> None:
    """`--target cpu --check` compiles before the interpreter runs: a GPU kernel is refused at
    once (TVM's merge_dynamic_shared_memory matmul, a 1024-cubed kernel, ran in the interpreter
    for minutes first). Here the interpreter would fault, so its error would come first."""
    path = tmp_path / "kernel.tir"
    path.write_text(
        """
@T.prim_func
def main(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
    with T.launch_thread("threadIdx.x", 4) as tx:
        B[tx] = T.Div(A[tx], 0)
"""
    )
    with pytest.raises(DiagnosticError, match="the cpu target cannot run a loop bound to thread"):
        run(path, target="cpu", check=True)
