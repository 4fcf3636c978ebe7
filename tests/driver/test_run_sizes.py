"""`tirc run` on symbolic shapes: `--size NAME=VALUE` (or a 0-d array named like the variable in
`--inputs`) sizes the random inputs, on every target; a size nothing gives is an error that
names the option. And the function run may be private."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from tirc.cli.main import main

# n is a scalar parameter that the shapes use; m is a shape variable no parameter gives
SYMBOLIC = """
# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(a: T.handle, b: T.handle, n: T.int32):
    m = T.int32()
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i, j in T.grid(n, m):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vj]
"""

PRIVATE = """
# from tvm.script import tirx as T

@T.prim_func(private=True)
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        B[i] = A[i] + T.float32(1)
"""


def invoke(*args: str) -> tuple[int, str]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(list(args))
    return code, output.getvalue()


@pytest.fixture
def symbolic(tmp_path: Path) -> Path:
    path = tmp_path / "symbolic.tir"
    path.write_text(SYMBOLIC)
    return path


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_sizes_shape_the_random_inputs(symbolic: Path, tmp_path: Path, target: str) -> None:
    out = tmp_path / "out.npz"
    check = ["--check"] if target == "cpu" else []
    code, output = invoke(
        "run", str(symbolic), "--target", target, "--size", "n=3", "--size", "m=5",
        "--save", str(out), *check,
    )  # fmt: skip
    assert code == 0, output
    assert "a: float32[3, 5] (random)" in output
    assert "n = 3 (--size)" in output
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["b"], saved["a"].sum(axis=1))


def test_a_missing_size_names_the_option(symbolic: Path) -> None:
    code, output = invoke("run", str(symbolic), "--size", "n=3")
    assert code == 1
    assert "the shape of A depends on m: give --size m=... (or the array a in --inputs)" in output
    code, output = invoke("run", str(symbolic))
    assert code == 1
    assert "give --size m=... --size n=..." in output


def test_a_missing_scalar_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "scalar.tir"
    path.write_text(SYMBOLIC.replace("(n, m)", "(4, m)").replace("(n,)", "(4,)"))
    code, output = invoke("run", str(path), "--size", "m=2")
    assert code == 1
    assert "scalar parameter n has no value: give it with --size n=..." in output


def test_sizes_as_0d_arrays_in_the_inputs(symbolic: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", m=np.array(6), n=np.array(2, np.int32))
    code, output = invoke("run", str(symbolic), "--inputs", str(tmp_path / "in.npz"))
    assert code == 0, output
    assert "a: float32[2, 6] (random)" in output
    assert "n = 2 (given)" in output


def test_sizes_from_the_given_arrays(symbolic: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", a=np.ones((2, 7), np.float32))
    code, output = invoke("run", str(symbolic), "--inputs", str(tmp_path / "in.npz"))
    assert code == 0, output
    assert "b: float32[2] (random)" in output
    assert "n = 2 (from the arrays' shapes)" in output


@pytest.mark.parametrize(
    ("inputs", "sizes", "complaint"),
    [
        ({"m": np.array(6)}, ["m=5"], "gives m = 6, but --size gives 5"),
        ({"a": np.ones((2, 7), np.float32)}, ["m=5", "n=2"], "so m = 7, but it is given as 5"),
        ({"m": np.ones(3)}, [], "gives shape variable m as a float64 array of shape (3,)"),
        ({}, ["k=5"], "--size k=5: the function has no shape variable k"),
    ],
)
def test_sizes_that_disagree_are_errors(
    symbolic: Path, tmp_path: Path, inputs: dict, sizes: list[str], complaint: str
) -> None:
    np.savez(tmp_path / "in.npz", **inputs)
    options = [word for size in sizes for word in ("--size", size)]
    code, output = invoke("run", str(symbolic), "--inputs", str(tmp_path / "in.npz"), *options)
    assert code == 1, output
    assert complaint in output
    assert "Traceback" not in output


@pytest.mark.parametrize("size", ["n", "n=", "n=-1", "n=x", "1n=3"])
def test_a_malformed_size_is_an_error(symbolic: Path, size: str) -> None:
    code, output = invoke("run", str(symbolic), "--size", size)
    assert code == 1
    assert f"invalid --size '{size}': expected NAME=VALUE" in output


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_private_function_runs(tmp_path: Path, target: str) -> None:
    """Issue #16 item 3: the CPU target looked the function up among the public ones."""
    path = tmp_path / "private.tir"
    path.write_text(PRIVATE)
    check = ["--check"] if target == "cpu" else []
    code, output = invoke("run", str(path), "--target", target, *check)
    assert code == 0, output
    assert f"ran main on {target}" in output


# A's shape uses n, which only the later parameter B's shape defines (TVM's
# test_forward_reference_symbolic_shape): the interpreter bound n after checking A against it
FORWARD = """
# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer(("n + 1",), "int32"), B: T.Buffer(("n",), "int32")):
    n = T.int32()
    for i in range(n):
        B[i] = A[i] + A[i + 1]
"""


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_shape_may_use_a_later_buffers_variable(tmp_path: Path, target: str) -> None:
    path = tmp_path / "forward.tir"
    path.write_text(FORWARD)
    out = tmp_path / "out.npz"
    check = ["--check"] if target == "cpu" else []
    code, output = invoke(
        "run", str(path), "--target", target, "--size", "n=5", "--save", str(out), *check
    )
    assert code == 0, output
    with np.load(out) as saved:
        np.testing.assert_array_equal(saved["B"], saved["A"][:-1] + saved["A"][1:])
